#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-vm: --maxmem 12G --virtio-mem 1G:0:unplugged-inaccessible=on,backend=shm --virtio-mem 1G:0:unplugged-inaccessible=off --virtio-mem 4G:0:unplugged-inaccessible=on,dynamic-memslots=on,backend=shm
# memhp-budget: 200
#
# The upstream virtio_mem driver with QEMU 10's unplugged-inaccessible
# (on/off) and dynamic-memslots=on devices: features negotiated, plug and
# unplug, no access to unplugged memory, memslots mapped only while
# plugged. The cases are in virtio_mem_props_lib.sh.

. "$(dirname "$0")/lib.sh"
# shellcheck source=virtio_mem_props_lib.sh
. "$(dirname "$0")/virtio_mem_props_lib.sh"

props_run virtio_mem
