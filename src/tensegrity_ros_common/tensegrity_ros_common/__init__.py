"""Shared pieces of the tensegrity ROS 2 nodes (topic names, QoS, model description, conversions)."""
