"""What every subsystem shares and none owns: plugin registries and content hashes."""
