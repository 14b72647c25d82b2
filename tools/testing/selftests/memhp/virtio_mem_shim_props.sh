#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-vm: --append module_blacklist=virtio_mem --maxmem 12G --virtio-mem 1G:0:unplugged-inaccessible=on,backend=shm --virtio-mem 1G:0:unplugged-inaccessible=off --virtio-mem 4G:0:unplugged-inaccessible=on,dynamic-memslots=on,backend=shm
# memhp-budget: 190
#
# virtio_mem_shim with QEMU 10's unplugged-inaccessible (on/off) and
# dynamic-memslots=on devices: what the shim negotiates
# (VIRTIO_MEM_F_UNPLUGGED_INACCESSIBLE is in its feature table), plug and
# unplug, no access to unplugged memory, memslots mapped only while
# plugged. The cases are in virtio_mem_props_lib.sh.

. "$(dirname "$0")/lib.sh"
# shellcheck source=virtio_mem_props_lib.sh
. "$(dirname "$0")/virtio_mem_props_lib.sh"

props_run virtio_mem_shim
