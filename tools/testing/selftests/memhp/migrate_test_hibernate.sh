#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-vm: --append module_blacklist=virtio_mem --maxmem 12G --virtio-mem 1G:0:unplugged-inaccessible=on,backend=shm --virtio-mem 1G:0:unplugged-inaccessible=off --virtio-mem 4G:0:unplugged-inaccessible=on,dynamic-memslots=on,backend=shm
# memhp-budget: 30
#
# migrate_test refuses hibernation while its pages are balloon pages
# (migrate_test_hibernate.c). Its guest must be able to hibernate, and
# upstream virtio_mem refuses PM_HIBERNATION_PREPARE while it drives a
# device: virtio_mem_shim_props.sh's guest blacklists virtio_mem, so this
# test shares that guest's options (and boot).

. "$(dirname "$0")/lib.sh"

memhp_require_guest
exec "$(memhp_bin migrate_test_hibernate)"
