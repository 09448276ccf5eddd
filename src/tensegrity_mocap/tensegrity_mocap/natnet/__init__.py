"""NatNet, OptiTrack Motive's streaming protocol: wire constants, frame types and the parser
(:mod:`.protocol`, whose docstring describes the packets), packet building for emulators and tests
(:mod:`.build`) and the poll-driven UDP client (:mod:`.client`). Pure Python + numpy, no ROS."""
from tensegrity_mocap.natnet.protocol import (NAT_CONNECT, NAT_SERVERINFO, NAT_REQUEST, NAT_RESPONSE,
                                              NAT_REQUEST_MODELDEF, NAT_MODELDEF, NAT_REQUEST_FRAMEOFDATA,
                                              NAT_FRAMEOFDATA, NAT_MESSAGESTRING, NAT_DISCONNECT, NAT_KEEPALIVE,
                                              NAT_DISCONNECTBYTIMEOUT, NAT_ECHOREQUEST, NAT_ECHORESPONSE,
                                              NAT_DISCOVERY, NAT_UNRECOGNIZED_REQUEST, MESSAGE_NAMES,
                                              DEFAULT_MULTICAST_ADDRESS, DEFAULT_COMMAND_PORT, DEFAULT_DATA_PORT,
                                              MAX_NAMELENGTH, MAX_PAYLOAD, SERVER_INFO_SIZE, SENDER_SIZE,
                                              PRECISION_FRACTION_SCALE, MARKER_OCCLUDED, MARKER_PC_SOLVED,
                                              MARKER_MODEL_SOLVED, MARKER_HAS_MODEL, MARKER_UNLABELED, MARKER_ACTIVE,
                                              FRAME_RECORDING, FRAME_MODELS_CHANGED, RB_DTYPE, MARKER_DTYPE,
                                              NatNetError, RigidBody, Skeleton, Asset, AnalogDevice, MocapFrame,
                                              make_marker_id, ServerInfo, normalize_version, parse_frame,
                                              parse_header, parse_server_info, parse_packet)
from tensegrity_mocap.natnet.build import (frame_payload, build_frame, build_server_info, build_connect,
                                           build_request, build_keepalive, build_disconnect, build_message_string)
from tensegrity_mocap.natnet.client import NatNetClient

__all__ = ["NAT_CONNECT", "NAT_SERVERINFO", "NAT_REQUEST", "NAT_RESPONSE", "NAT_REQUEST_MODELDEF", "NAT_MODELDEF",
           "NAT_REQUEST_FRAMEOFDATA", "NAT_FRAMEOFDATA", "NAT_MESSAGESTRING", "NAT_DISCONNECT", "NAT_KEEPALIVE",
           "NAT_DISCONNECTBYTIMEOUT", "NAT_ECHOREQUEST", "NAT_ECHORESPONSE", "NAT_DISCOVERY",
           "NAT_UNRECOGNIZED_REQUEST", "MESSAGE_NAMES", "DEFAULT_MULTICAST_ADDRESS", "DEFAULT_COMMAND_PORT",
           "DEFAULT_DATA_PORT", "MAX_NAMELENGTH", "MAX_PAYLOAD", "SERVER_INFO_SIZE", "SENDER_SIZE",
           "PRECISION_FRACTION_SCALE", "MARKER_OCCLUDED", "MARKER_PC_SOLVED", "MARKER_MODEL_SOLVED",
           "MARKER_HAS_MODEL", "MARKER_UNLABELED", "MARKER_ACTIVE", "FRAME_RECORDING", "FRAME_MODELS_CHANGED",
           "RB_DTYPE", "MARKER_DTYPE", "NatNetError", "RigidBody", "Skeleton", "Asset", "AnalogDevice",
           "MocapFrame", "make_marker_id", "ServerInfo", "normalize_version", "parse_frame", "parse_header",
           "parse_server_info", "parse_packet", "frame_payload", "build_frame", "build_server_info",
           "build_connect", "build_request", "build_keepalive", "build_disconnect", "build_message_string",
           "NatNetClient"]
