"""Motion-capture bridge: NatNet client, Motive CSV replay, per-node marker tracking, plate poses,
and the simulation-vs-experiment comparison."""
