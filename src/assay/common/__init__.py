"""What every subsystem shares and none owns: plugin registries, content hashes and hot-path JSON text."""
