"""What the database stands on: targets, filesystems, options, scheduler, safety, ledger."""
