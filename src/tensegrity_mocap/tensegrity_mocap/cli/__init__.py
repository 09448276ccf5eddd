"""The command lines of the package, argument parsing and printing only: ``tensegrity-compare``
(:mod:`.compare`) and ``tensegrity-mocap`` (:mod:`.mocap`, with its subcommands ``model`` there, ``track``
(:mod:`.track`) and ``synth`` (:mod:`.synth`)); each module's ``main`` is its console script. The ROS node
``mocap_bridge_node`` is :mod:`tensegrity_mocap.bridge.node`.

Nothing is imported here, so a command loads only what it needs.
"""
