"""Named configurations: what users actually try (see shared/FIELD-REPORTS.md)."""

from __future__ import annotations

from pickfs.model import FsConfig
from pickfs.stack.filesystems import RAW

_PRESETS: tuple[FsConfig, ...] = (
    FsConfig("ext4", "ext4", description="ext4 with default mkfs and mount options"),
    FsConfig("ext4-nobarrier", "ext4", mount_options=("nobarrier",), base="ext4",
             description="ext4 without write barriers (R1, R2: fast, unsafe on power loss)"),
    FsConfig("ext4-nodelalloc", "ext4", mount_options=("nodelalloc",), base="ext4",
             description="ext4 without delayed allocation"),
    FsConfig("ext4-writeback", "ext4", mount_options=("data=writeback",), base="ext4",
             description="ext4 with data=writeback journaling"),
    FsConfig("ext4-journal", "ext4", mount_options=("data=journal",), base="ext4",
             description="ext4 journaling data as well as metadata"),
    FsConfig("ext3", "ext3", description="ext3 (served by the ext4 driver on current kernels)"),
    FsConfig("ext2", "ext2", description="ext2: no journal"),
    FsConfig("xfs", "xfs", description="xfs with default mkfs and mount options"),
    FsConfig("xfs-tuned", "xfs", mkfs_options=("-l", "lazy-count=1,size=128m"),
             mount_options=("logbufs=8", "logbsize=256k"),
             description="R4's tuned xfs: 128 MiB log, logbufs=8, logbsize=256k"),
    FsConfig("btrfs", "btrfs", description="btrfs with default mkfs and mount options"),
    FsConfig("btrfs-lzo", "btrfs", mount_options=("compress=lzo",), base="btrfs",
             description="btrfs with lzo compression (R3)"),
    FsConfig("tmpfs", "tmpfs", description="in memory: the upper bound, keeps nothing on power loss"),
)

PRESETS: dict[str, FsConfig] = {p.name: p for p in _PRESETS}

# Not a preset ("all" leaves it out): the block device with no filesystem, for fio workloads only.
RAW_CONFIG = FsConfig(RAW, RAW, description="the block device itself, no filesystem (fio workloads; baseline = 100)")
