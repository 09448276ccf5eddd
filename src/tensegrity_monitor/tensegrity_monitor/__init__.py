"""The self-collision monitor node: all-pairs capsule clearances, diagnostics and a latched safety stop."""
