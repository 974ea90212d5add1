"""What the machine did during a run: /proc/diskstats, /proc/stat, /proc/pressure/io, /proc/<pid>/io."""
