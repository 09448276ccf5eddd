"""The mocap bridge: the ROS node ``mocap_bridge`` (:mod:`.node`, console script ``mocap_bridge_node``) that turns a
NatNet stream or a Motive CSV replay into per-node positions, and its parts that need no ROS: the stream's
addresses (:mod:`.config`; marker labels and the marker map are in :mod:`tensegrity_mocap.tracking.labels`), what
it tells about the raw markers (:mod:`.output`), the time stamps of a CSV replay (:mod:`.replay_time`) and the
frames received, published and lost (:mod:`.loss`).

Nothing is imported here: the node notes its launcher (``tensegrity_ros_common.parent_watch``) in its first
import, before numpy, rclpy and the engine load, and importing ``tensegrity_mocap.bridge.node`` runs this
file first. Import the names from the modules.
"""
