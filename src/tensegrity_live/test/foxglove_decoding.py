"""Test helper: foxglove.messages objects and advertised channels decoded with their own protobuf schemas."""
import base64

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory


def parser(schema_name: str, schema_data: bytes):
    """A function bytes -> protobuf message of ``schema_name`` from a FileDescriptorSet."""
    pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(schema_data).file:
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(schema_name)).FromString


def decode(message):
    """The protobuf message of a foxglove.messages object, decoded with its own schema."""
    schema = type(message).get_schema()
    return parser(schema.name, schema.data)(message.encode())


def channel_parser(channel: dict):
    """bytes -> protobuf message for a channel of a Foxglove 'advertise' (schema base64 FileDescriptorSet)."""
    return parser(channel["schemaName"], base64.b64decode(channel["schema"]))
