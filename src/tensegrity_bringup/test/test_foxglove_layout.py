"""The saved Foxglove layout (docs/foxglove/tensegrity_layout.json) fits the live view it is for.

Every panel of the layout's tree has its settings and is a panel type the Foxglove app and Lichtblick both
know; every topic a panel subscribes to is a channel the live view serves, every topic a panel publishes on is
one it accepts from clients, with a schema it accepts; plotted fields are fields the live view's messages have
(for the default bringup model: its string and actuator names); the 3D panel follows the simulator's world
frame and publishes poses on /goal_pose."""
import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
LAYOUT = ROOT / "docs/foxglove/tensegrity_layout.json"
# Panel types registered by both the Foxglove app and Lichtblick (their panel lists; a layout with another type
# opens with an "unknown panel" box in its place).
KNOWN_PANEL_TYPES = {"3D", "Plot", "Teleop", "Publish", "RosOut", "RawMessages", "Image", "Indicator", "Gauge",
                     "map", "Parameters", "StateTransitions", "Table", "TopicGraph", "SourceInfo", "Tab",
                     "DiagnosticSummary", "DiagnosticStatusPanel", "GlobalVariableSliderPanel"}
# What the app's panels advertise when they publish (their source): the Teleop panel and the 3D panel's
# "publish pose" ROS 1 style names, the Publish panel the datatype of its settings.
TELEOP_SCHEMA = "geometry_msgs/Twist"
THREE_D_POSE_SCHEMA = "geometry_msgs/PoseStamped"
SCALAR_TYPES = ("boolean", "string", "number", "integer")     # JSON schema field types the apps read
# The scene channels the 3D panel shows (live_spec_36: /scene/* and /tf).
SCENE_CHANNELS = {"/scene/robot", "/scene/world", "/scene/contacts", "/scene/clearance", "/scene/status",
                  "/scene/goal", "/scene/raw_markers", "/tf"}


def served_channels() -> dict:
    """{topic: set of JSON fields, "strings"/"actuators" (named by the model) or None (a typed Foxglove schema)}
    of the channels the live view serves (live_spec_36; the JSON fields from the schemas it advertises;
    test_doc_commands.py checks a running live view advertises them all)."""
    from tensegrity_live import streams
    return {**{t: None for t in SCENE_CHANNELS}, "/log": None, "/tensions": "strings", "/inputs": "actuators",
            **{topic: set(schema["properties"]) for topic, schema in (
                ("/clearance", streams.CLEARANCE_SCHEMA), ("/odometry", streams.ODOMETRY_SCHEMA),
                ("/safety", streams.SAFETY_SCHEMA))}}


def app_schema_problems(schema: dict, where: str = "") -> list:
    """Why the Foxglove app or Lichtblick would fail to read the JSON ``schema`` of a channel (empty: it reads):
    they take an object's fields from "properties" only (Foxglove 1.x fails on an object without it), each field
    with one type (a list such as ["number", "null"] fails the whole channel), nested objects and arrays alike."""
    if schema.get("type") != "object":
        return [f"{where or 'schema'}: type {schema.get('type')!r}, not 'object'"]
    if not isinstance(schema.get("properties"), dict):
        return [f"{where or 'schema'}: no 'properties'"]
    problems = []
    for name, field in schema["properties"].items():
        kind, path = field.get("type"), f"{where}.{name}"
        if kind == "object":
            problems += app_schema_problems(field, path)
        elif kind == "array":
            items = field.get("items", {})
            problems += (app_schema_problems(items, path + "[]") if items.get("type") == "object" else
                         [] if items.get("type") in SCALAR_TYPES else [f"{path}[]: type {items.get('type')!r}"])
        elif kind not in SCALAR_TYPES:
            problems.append(f"{path}: type {kind!r}")
    return problems


def served_json_schemas() -> dict:
    from tensegrity_live import streams
    return {"/tensions": streams.TENSIONS_SCHEMA, "/inputs": streams.INPUTS_SCHEMA,
            "/clearance": streams.CLEARANCE_SCHEMA, "/odometry": streams.ODOMETRY_SCHEMA,
            "/safety": streams.SAFETY_SCHEMA}


def client_channels() -> dict:
    """{topic: schema names} the live view accepts from a client."""
    from tensegrity_live.steering import ACCEPTED
    return ACCEPTED


@pytest.fixture(scope="module")
def layout() -> dict:
    return json.loads(LAYOUT.read_text())


def tree_panels(node) -> list:
    """The panel ids at the leaves of a layout tree (a panel id or {first, second, direction, ...})."""
    if isinstance(node, str):
        return [node]
    assert set(node) <= {"first", "second", "direction", "splitPercentage"}, node
    assert node["direction"] in ("row", "column") and 0 < node.get("splitPercentage", 50) < 100, node
    return tree_panels(node["first"]) + tree_panels(node["second"])


def panels(layout, kind: str) -> list:
    return [cfg for pid, cfg in layout["configById"].items() if pid.split("!")[0] == kind]


def plotted(layout) -> list:
    """[(topic, field)] of every plot series ("/tensions.sc1" -> ("/tensions", "sc1"))."""
    paths = [p["value"] for cfg in panels(layout, "Plot") for p in cfg["paths"]]
    assert all(p.startswith("/") and p.count(".") == 1 for p in paths), paths
    return [tuple(p.split(".")) for p in paths]


def subscribed_topics(layout) -> set:
    """Every topic a panel of ``layout`` reads."""
    topics = {t for cfg in panels(layout, "3D") for t in cfg["topics"]}
    topics |= {topic for topic, _ in plotted(layout)}
    topics |= {cfg["topicToRender"] for cfg in panels(layout, "RosOut")}
    topics |= {cfg["topicPath"].split(".")[0] for cfg in panels(layout, "RawMessages")}
    return topics


def default_model():
    from tensegrity_engine import load_model
    params = yaml.safe_load((ROOT / "config/tensegrity_simulator.yaml").read_text())
    return load_model(params["/**/tensegrity_simulator"]["ros__parameters"]["model"])


def test_every_panel_is_placed_configured_and_of_a_known_type(layout):
    assert set(layout) == {"configById", "globalVariables", "userNodes", "playbackConfig", "layout"}
    placed = tree_panels(layout["layout"])
    assert len(placed) == len(set(placed)) and set(placed) == set(layout["configById"]), placed
    kinds = {pid.split("!")[0] for pid in placed}
    assert kinds <= KNOWN_PANEL_TYPES, kinds - KNOWN_PANEL_TYPES
    # the view: the scene, plots, steering and the log and safety state at once
    assert {"3D", "Plot", "Teleop", "Publish", "RosOut", "RawMessages"} <= kinds


def test_every_topic_read_is_served_and_the_scene_is_all_there(layout):
    served = served_channels()
    read = subscribed_topics(layout)
    assert read <= set(served), read - set(served)
    (three_d,) = panels(layout, "3D")
    assert set(three_d["topics"]) == SCENE_CHANNELS and all(v["visible"] for v in three_d["topics"].values())
    assert {"/log", "/safety", "/clearance", "/odometry", "/tensions", "/inputs"} <= read


def test_the_plotted_fields_exist(layout):
    """JSON fields of the spec's messages; /tensions and /inputs by the default bringup model's names."""
    model = default_model()
    names = {"strings": set(model.string_names), "actuators": set(model.actuator_names)}
    served = served_channels()
    fields = {}
    for topic, field in plotted(layout):
        fields.setdefault(topic, set()).add(field)
    for topic, got in fields.items():
        allowed = names[served[topic]] if isinstance(served[topic], str) else served[topic]
        assert allowed is not None and got <= allowed, (topic, got - (allowed or set()))
    assert fields["/tensions"] == names["strings"] and fields["/inputs"] == names["actuators"]
    assert "min_m" in fields["/clearance"] and fields["/odometry"] == {"speed_m_s"}


def test_every_topic_published_is_accepted_with_its_schema(layout):
    accepted = client_channels()
    (teleop,) = panels(layout, "Teleop")
    assert teleop["topic"] == "/cmd_vel" and TELEOP_SCHEMA in accepted["/cmd_vel"]
    # cmd_vel has no front (controllers.md): the arrows move along world x and y, fast enough to beat min_speed
    buttons = [teleop[k] for k in ("upButton", "downButton", "leftButton", "rightButton")]
    assert {b["field"] for b in buttons} == {"linear-x", "linear-y"} and all(abs(b["value"]) >= 0.01 for b in buttons)
    assert teleop["publishRate"] > 2.0       # Hz: the controllers drop a cmd_vel older than 0.5 s
    # the Publish panels' templates as the live view takes them (a goal point: the 3D panel's publish tool is
    # offered for ROS data sources only, which the Python SDK's server cannot announce)
    from tensegrity_live.steering import parse
    templates = {cfg["topicName"]: cfg for cfg in panels(layout, "Publish")}
    assert set(templates) == {"/goal_pose", "/plate_goal"}
    for topic, cfg in templates.items():
        command = parse(topic, cfg["datatype"], "json", cfg["value"].encode())
        assert command.frame_id == "world", (topic, command)
    (three_d,) = panels(layout, "3D")
    assert three_d["publish"] == {"type": "pose", "poseTopic": "/goal_pose"}
    assert THREE_D_POSE_SCHEMA in accepted["/goal_pose"]


def test_the_3d_panel_follows_the_simulators_world_frame(layout):
    params = yaml.safe_load((ROOT / "config/tensegrity_simulator.yaml").read_text())
    (three_d,) = panels(layout, "3D")
    assert three_d["followTf"] == params["/**/tensegrity_simulator"]["ros__parameters"]["frame_id"] == "world"


def test_the_plate_goal_template_is_the_readmes_goal(layout):
    """The Publish panel's plate_goal is the README's --plate-goal (a goal the docs show reachable), its
    quaternion rounded to 6 decimals (< 1e-5 rad)."""
    import re
    from scipy.spatial.transform import Rotation
    from tensegrity_bringup.drive import parse_numbers, plate_goal_frame
    text = re.search(r"--plate-goal (\S+)", (ROOT / "README.md").read_text()).group(1)
    goal = plate_goal_frame(parse_numbers("--plate-goal", text, 6))
    (publish,) = [cfg for cfg in panels(layout, "Publish") if cfg["topicName"] == "/plate_goal"]
    pose = json.loads(publish["value"])["pose"]
    q = pose["orientation"]
    rotation = Rotation.from_quat([q[k] for k in "xyzw"])
    assert [pose["position"][k] for k in "xyz"] == pytest.approx(goal[:3, 3], abs=1e-9)
    assert (rotation.inv() * Rotation.from_matrix(goal[:3, :3])).magnitude() < 1e-5


def test_the_apps_can_read_the_json_schemas_the_live_view_advertises():
    """Failed before (seen in the Foxglove Studio 1.48 web build against the running live view, 'Failed to parse
    channel schema on /odometry: Unsupported type ["number","null"]'; Lichtblick's reader throws the same): every
    plot and the /safety panel stayed empty."""
    problems = {topic: app_schema_problems(schema) for topic, schema in served_json_schemas().items()}
    assert not any(problems.values()), problems
    assert app_schema_problems({"type": "object", "properties": {"x": {"type": ["number", "null"]}}})   # caught
    assert app_schema_problems({"type": "object", "additionalProperties": {"type": "number"}})


def test_the_live_view_page_lists_every_parameter_with_its_default():
    """docs/live_view.md's parameter table: the node's parameters, each with the default of config/live_view.yaml
    (the file the bringup and the launch files load) and of the node itself."""
    import re
    from tensegrity_live.live_view_node import PARAMETERS
    rows = re.findall(r"^\| `(\w+)` \| `([^`]*)` \|", (ROOT / "docs/live_view.md").read_text(), re.M)
    documented = {name: yaml.safe_load(value) for name, value in rows}
    config = yaml.safe_load((ROOT / "config/live_view.yaml").read_text())["/**/live_view"]["ros__parameters"]
    assert documented == config == {name: default for name, (default, _) in PARAMETERS.items()}, documented
