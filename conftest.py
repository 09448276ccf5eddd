"""Suite-wide guard: no node may publish a message with a Python int in a scalar float field (the PyPI
rclpy wheel sends such a value as a denormal, e.g. 5 -> 5e-324). Every ``Publisher.publish`` in the test
process is checked; a test during which one happened fails, naming the topic and field."""
import pytest

_violations = []


def pytest_configure(config):
    try:
        from rclpy.publisher import Publisher
        from tensegrity_ros_common.msgcheck import int_float_fields
    except ImportError:                      # engine-only environments
        return
    original = Publisher.publish

    def checked_publish(self, msg):
        bad = int_float_fields(msg) if not isinstance(msg, (bytes, bytearray, memoryview)) else []
        if bad:
            _violations.append(f"{self.topic_name} ({type(msg).__name__}): int in float field(s) {bad[:5]}")
        return original(self, msg)

    Publisher.publish = checked_publish


@pytest.fixture(autouse=True)
def _no_int_in_float_fields():
    start = len(_violations)
    yield
    new = _violations[start:]
    if new:
        pytest.fail("published messages with a Python int in a float64 field (sent as garbage by the rclpy "
                    "wheel): " + "; ".join(sorted(set(new))[:10]), pytrace=False)
