"""Kinds of target: where each configuration stands (loop-backed images, a spare device, existing directories).

One `TargetKind` per kind in `KINDS` carries what the rest of pickfs asks of it; code elsewhere asks
`target_kind(plan.target)`, never compares the kind's name with a string. How a configuration's
filesystem type stands on it (a filesystem made and mounted, one in memory, the raw device itself)
is the filesystem type's own fact (stack/filesystems.py); the target says where its block device
comes from, or that it builds nothing at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from pickfs.model import Target


@dataclass(frozen=True)
class TargetKind:
    name: str  # as a plan's [target] kind and --target name it
    # pickfs builds each configuration: mkfs and mount (so it needs root, and the kernel's support and the
    # tools are checked); the raw baseline and crash tests need it. False: existing directories, as they are.
    builds: bool
    # each configuration on a loop device over a new sparse image in the work directory: its size is
    # pickfs's to choose (checked against the job, or sized to it), its scheduler only the loop device's queue
    images: bool
    # a spare block device named by the user, erased: confirmed before anything is written, checked again
    # right before, and it holds one filesystem at a time (so nothing stands side by side on it)
    erases: bool
    side_by_side: bool  # all configurations can stand at once
    where: str  # what a dry run says it builds on ({size} {workdir} {device})
    queue: str = ""  # the queue a configuration's scheduler setting changes ({device}); "": none

    def describe(self, target: Target, size: str) -> str:
        return self.where.format(size=size, workdir=target.workdir, device=target.device)

    def scheduler_queue(self, target: Target) -> str:
        return self.queue.format(device=target.device)


IMAGE = TargetKind("image", builds=True, images=True, erases=False, side_by_side=True,
                   where="{size} loop-backed images under {workdir}", queue="the loop device's queue")
DEVICE = TargetKind("device", builds=True, images=False, erases=True, side_by_side=False,
                    where="the device {device} (erased)", queue="{device}'s queue")
DIRECTORY = TargetKind("directory", builds=False, images=False, erases=False, side_by_side=True,
                       where="existing directories")

KINDS: dict[str, TargetKind] = {k.name: k for k in (IMAGE, DEVICE, DIRECTORY)}


def target_kind(target: Target) -> TargetKind:
    """The kind of a plan's target (a plan is checked before it gets here: its kind is one of KINDS)."""
    return KINDS[target.kind]
