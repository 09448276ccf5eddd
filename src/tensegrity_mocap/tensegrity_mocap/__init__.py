"""Motion capture for tensegrity robots: OptiTrack's NatNet stream and Motive CSV exports in, per-node tracks,
models of your own robot, and the simulation-vs-experiment comparison out.

Layers (imports run downward only; only :mod:`.bridge.node` imports rclpy, and :mod:`.compare` reads suite
MCAP recordings through ``tensegrity_ros_common``):

* :mod:`.cli` - ``tensegrity-compare`` and ``tensegrity-mocap`` (argument parsing and printing);
* :mod:`.bridge` - the ``mocap_bridge`` ROS node and its ROS-free configuration, outputs and replay time;
* :mod:`.compare` - simulation vs experiment, and the engine's capture readers (entry points);
* :mod:`.capture` - a model from a static take, its equilibrium check;
* :mod:`.synthetic` - synthetic six-bar takes with their ground truth;
* :mod:`.tracking` - per-node marker tracking, registration, plausibility, offline takes;
* :mod:`.natnet` and :mod:`.motive` - the two capture formats: NatNet packets and client, Motive CSV files;
* :mod:`.axes` - Motive's Y-up and the models' Z-up.
"""
