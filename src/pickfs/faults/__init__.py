"""I/O errors injected under a storage setup: what the database and the filesystem then do with acknowledged commits."""
