"""Many machines: the same plan on a fleet of hosts, driven through Ansible (no agent of pickfs's own)."""
