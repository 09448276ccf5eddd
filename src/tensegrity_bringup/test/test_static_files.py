"""Consistency of the static files of the suite: URDF, RViz config, parameter files, launch file, Docker files.

These run without ROS 2 installed (only the engine, the nodes' modules and PyYAML). They check the files
against the code they describe: the URDF against the model's plate frames, the parameter files against
the parameters the nodes declare, the RViz topics against the topic names, the launch and Docker files
against the packages and console scripts in src/.
"""
import ast
import configparser
import json
import math
import os
import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml

from tensegrity_engine import load_model
from tensegrity_engine.frames import model_frames

ROOT = Path(__file__).resolve().parents[3]
URDF = ROOT / "urdf" / "stacked_manipulator.urdf"
RVIZ = ROOT / "config" / "tensegrity.rviz"
SIM_YAML = ROOT / "config" / "tensegrity_simulator.yaml"
MONITOR_YAML = ROOT / "config" / "collision_monitor.yaml"
LAUNCH = ROOT / "launch" / "simulation.launch.py"
BRINGUP_PACKAGE = ROOT / "src" / "tensegrity_bringup" / "tensegrity_bringup"
LAUNCH_SUPPORT = BRINGUP_PACKAGE / "launch_support.py"      # the launch files' shared helpers
LAUNCH_SUPPORT_MODULE = "tensegrity_bringup.launch_support"
DOCKERFILES = [ROOT / "docker" / "Dockerfile", ROOT / "docker" / "Dockerfile.rviz"]
COMPOSE = ROOT / "docker" / "compose.yaml"
IN_IMAGE = "/ws/src/tensegrity-ros"          # where the Dockerfiles copy the checkout
INSTALLED_SHARE = "/ws/install/tensegrity_bringup/share/tensegrity_bringup"
LAUNCH_ARGUMENTS = {"model", "namespace", "physics_rate", "publish_rate", "experiment", "rviz", "frame_id"}

# plate frame -> (URDF link, thickness [m], mass [kg]); None: fixed to the world, no inertial block
PLATES = {"C0": ("c0", 0.01, None), "C1": ("c1", 0.02, 2.7), "C2": ("c2", 0.01, 0.33)}


@pytest.fixture(scope="module")
def model():
    return load_model("stacked_manipulator")


@pytest.fixture(scope="module")
def rest_frames(model):
    return model_frames(model, model.positions)


@pytest.fixture(scope="module")
def urdf():
    return ET.parse(URDF).getroot()


def repo_package(name: str) -> bool:
    return (ROOT / "src" / name / "package.xml").is_file()


def package_dependencies(name: str) -> set:
    root = ET.parse(ROOT / "src" / name / "package.xml").getroot()
    tags = ("depend", "exec_depend", "build_depend", "test_depend", "build_export_depend", "buildtool_depend")
    return {e.text.strip() for tag in tags for e in root.iter(tag)}


def console_scripts(package: str) -> set:
    text = (ROOT / "src" / package / "setup.py").read_text()
    block = re.search(r"['\"]console_scripts['\"]\s*:\s*\[(.*?)\]", text, re.DOTALL)
    return set(re.findall(r"['\"]\s*([\w.-]+)\s*=", block.group(1))) if block else set()


# --- URDF ----------------------------------------------------------------------------------------------

def origin_transform(element) -> np.ndarray:
    """4x4 of a URDF <origin xyz rpy> (fixed-axis roll, pitch, yaw: R = Rz(yaw) Ry(pitch) Rx(roll))."""
    origin = element.find("origin")
    xyz = [float(v) for v in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split()]
    r, p, y = [float(v) for v in (origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split()]
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    T = np.eye(4)
    T[:3, :3] = Rz @ Ry @ Rx
    T[:3, 3] = xyz
    return T


def joint_to(urdf, child: str):
    joints = [j for j in urdf.iter("joint") if j.find("child").get("link") == child]
    assert len(joints) == 1, f"link {child} must be the child of exactly one joint"
    return joints[0]


def test_urdf_tree_has_one_root_world_and_the_plate_links(urdf, model):
    links = {link.get("name") for link in urdf.findall("link")}
    children = [j.find("child").get("link") for j in urdf.findall("joint")]
    assert len(children) == len(set(children)), "a link is the child of two joints"
    assert links - set(children) == {"world"}, "the URDF must have exactly one root, 'world'"
    assert set(children) <= links and {j.find("parent").get("link") for j in urdf.findall("joint")} <= links
    # the simulator broadcasts the plate frames as the model's frame names in lower case
    assert {name.lower() for name in model.frame_names} == {"c0", "c1", "c2"} <= links


def test_urdf_joint_types(urdf):
    assert joint_to(urdf, "c0").get("type") == "fixed"
    for link in ("c1", "c2"):
        joint = joint_to(urdf, link)
        assert joint.get("type") == "floating", f"{link} moves: its TF comes from the simulator"
        assert joint.find("parent").get("link") == "world"


@pytest.mark.parametrize("frame", ["C0", "C1", "C2"])
def test_urdf_joint_origins_are_the_rest_plate_frames(urdf, rest_frames, frame):
    link = PLATES[frame][0]
    T = origin_transform(joint_to(urdf, link))
    C = rest_frames[frame]
    assert np.allclose(T[:3, 3], C[:3, 3], atol=1e-6), f"{link}: origin {T[:3, 3]} vs model {C[:3, 3]}"
    assert np.allclose(T[:3, :3], C[:3, :3], atol=1e-6), f"{link}: orientation differs from the model's {frame}"


@pytest.mark.parametrize("frame", ["C0", "C1", "C2"])
def test_urdf_plate_visual_is_a_cylinder_of_the_plate_circumradius(urdf, model, frame):
    name, thickness, _ = PLATES[frame]
    nodes = model.positions[list(model.frame_nodes[list(model.frame_names).index(frame)])]
    circumradius = float(np.mean(np.linalg.norm(nodes - nodes.mean(axis=0), axis=1)))
    link = next(link for link in urdf.findall("link") if link.get("name") == name)
    cylinder = link.find("visual/geometry/cylinder")
    assert cylinder is not None, f"{name} has no cylinder visual"
    assert abs(float(cylinder.get("radius")) - circumradius) < 1e-3
    assert abs(float(cylinder.get("length")) - thickness) < 1e-9
    # the visual stays on the plate: centred on it, or (the ground plate) just below it
    z = origin_transform(link.find("visual"))[2, 3]
    assert abs(z) <= thickness / 2 + 1e-9


@pytest.mark.parametrize("frame", ["C1", "C2"])
def test_urdf_plate_inertia_is_the_solid_cylinder_of_its_visual(urdf, frame):
    name, _, mass = PLATES[frame]
    link = next(link for link in urdf.findall("link") if link.get("name") == name)
    r = float(link.find("visual/geometry/cylinder").get("radius"))
    h = float(link.find("visual/geometry/cylinder").get("length"))
    assert float(link.find("inertial/mass").get("value")) == pytest.approx(mass)
    inertia = {k: float(v) for k, v in link.find("inertial/inertia").attrib.items()}
    transverse = mass * (3 * r * r + h * h) / 12
    assert inertia["ixx"] == pytest.approx(transverse, rel=1e-6)
    assert inertia["iyy"] == pytest.approx(transverse, rel=1e-6)
    assert inertia["izz"] == pytest.approx(mass * r * r / 2, rel=1e-6)
    assert inertia["ixy"] == inertia["ixz"] == inertia["iyz"] == 0.0
    assert np.allclose(origin_transform(link.find("inertial")), np.eye(4))


# --- RViz config -----------------------------------------------------------------------------------------

def rviz_displays():
    config = yaml.safe_load(RVIZ.read_text())
    return config, config["Visualization Manager"]["Displays"]


def rviz_topics(displays):
    """(display class, topic property dict) of every display that subscribes to a topic."""
    out = []
    for display in displays:
        for key in ("Topic", "Description Topic"):
            if isinstance(display.get(key), dict):
                out.append((display["Class"], display[key]))
    return out


def known_topics(model):
    topics = pytest.importorskip("tensegrity_ros_common.topics")
    bridge_output = pytest.importorskip("tensegrity_mocap.bridge.output")
    names = {topics.MODEL_DESCRIPTION, topics.NODE_POSITIONS, topics.STRING_STATES, topics.JOINT_STATES,
             topics.MARKERS, topics.COLLISION_MARKERS, topics.MIN_CLEARANCE, topics.SAFETY_STOP,
             topics.DIAGNOSTICS, "robot_description", topics.OBSTACLE_MARKERS, topics.CONTACT_MARKERS,
             topics.ODOMETRY}
    names |= {bridge_output.RAW_MARKERS, bridge_output.RVIZ_MARKERS}       # the mocap bridge's markers
    names |= {topics.plate_pose_topic(f) for f in model.frame_names}
    return {"/" + n.lstrip("/") for n in names}, topics


def test_rviz_config_parses_and_has_the_displays():
    config, displays = rviz_displays()
    assert config["Visualization Manager"]["Global Options"]["Fixed Frame"] == "world"
    classes = [d["Class"] for d in displays]
    for cls in ("Grid", "MarkerArray", "PoseArray", "Pose", "TF", "RobotModel"):
        assert f"rviz_default_plugins/{cls}" in classes
    view = config["Visualization Manager"]["Views"]["Current"]
    assert view["Class"] == "rviz_default_plugins/Orbit"
    assert 2.0 <= float(view["Distance"]) <= 4.0
    assert 0.5 <= float(view["Focal Point"]["Z"]) <= 1.1


def test_rviz_topics_exist_and_qos_matches_the_publishers(model):
    known, topics = known_topics(model)
    _, displays = rviz_displays()
    subscribed = rviz_topics(displays)
    names = {t["Value"] for _, t in subscribed}
    assert {"/markers", "/collision_markers", "/node_positions", "/plate_pose/c0", "/plate_pose/c1",
            "/plate_pose/c2", "/robot_description"} <= names
    best_effort = {"/" + topics.NODE_POSITIONS, "/" + topics.STRING_STATES, "/" + topics.JOINT_STATES,
                   "/markers/raw"}
    best_effort |= {"/" + topics.plate_pose_topic(f) for f in model.frame_names}
    for cls, topic in subscribed:
        assert topic["Value"] in known, f"{cls} subscribes to unknown topic {topic['Value']}"
        assert topic["Value"].startswith("/"), "RViz topics are absolute (the launch file remaps them)"
        # a reliable subscription gets nothing from a best-effort publisher
        if topic["Value"] in best_effort:
            assert topic["Reliability Policy"] == "Best Effort", topic["Value"]
        else:
            assert topic["Reliability Policy"] == "Reliable", topic["Value"]
    description = next(t for _, t in subscribed if t["Value"] == "/robot_description")
    assert description["Durability Policy"] == "Transient Local", "robot_state_publisher latches the URDF"
    obstacles = next(t for _, t in subscribed if t["Value"] == "/" + topics.OBSTACLE_MARKERS)
    assert obstacles["Durability Policy"] == "Transient Local", "the simulator latches the obstacle markers"
    for display in displays:
        if display["Class"] == "rviz_default_plugins/Pose":
            assert display["Shape"] == "Axes"


# --- parameter files ---------------------------------------------------------------------------------------

def flatten(params: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in params.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def node_section(path: Path, node_name: str) -> dict:
    data = yaml.safe_load(path.read_text())
    assert list(data) == [f"/**/{node_name}"], f"{path.name}: expected the one key '/**/{node_name}'"
    return flatten(data[f"/**/{node_name}"]["ros__parameters"])


def same_parameter_type(value, default) -> bool:
    """rclpy refuses an override of another type than the declared default (an int for a double, too)."""
    if isinstance(default, list):
        return isinstance(value, list) and all(same_parameter_type(v, default[0]) for v in value)
    return type(value) is type(default)


CONFIGS = [
    (SIM_YAML, "tensegrity_sim.simulator_node", "tensegrity_simulator"),
    (MONITOR_YAML, "tensegrity_monitor.collision_monitor_node", "collision_monitor"),
    (ROOT / "config" / "locomotion_controller.yaml", "tensegrity_control.locomotion_node", "locomotion_controller"),
    (ROOT / "config" / "pose_controller.yaml", "tensegrity_control.pose_node", "pose_controller"),
]
CONFIG_IDS = ["simulator", "monitor", "locomotion", "pose"]


# the policy controller needs a policy file the config cannot name (paths differ per install): its start with the
# config is test_policy_through_ros.py's (the bringup passes the file)
POLICY_CONFIG = (ROOT / "config" / "policy_controller.yaml", "tensegrity_control.policy_node", "policy_controller")
# the live view's start with its config would take port 8765 on this host: tensegrity_live's tests start it on port 0
LIVE_CONFIG = (ROOT / "config" / "live_view.yaml", "tensegrity_live.live_view_node", "live_view")


@pytest.mark.parametrize("path, module, node_name", CONFIGS + [POLICY_CONFIG, LIVE_CONFIG],
                         ids=CONFIG_IDS + ["policy", "live_view"])
def test_config_parameters_are_declared_by_the_node(path, module, node_name):
    declared = pytest.importorskip(module).PARAMETERS
    params = node_section(path, node_name)
    assert params, f"{path.name} sets no parameters"
    unknown = sorted(set(params) - set(declared))
    assert not unknown, f"{path.name}: parameters the node does not declare: {unknown}"
    for name, value in params.items():
        default = declared[name][0]
        assert same_parameter_type(value, default), \
            f"{path.name}: {name} = {value!r} ({type(value).__name__}), declared as {type(default).__name__}"


@pytest.mark.parametrize("path, module, node_name", CONFIGS, ids=CONFIG_IDS)
def test_nodes_take_the_config_files(path, module, node_name):
    """Start the node with the file as --params-file: its name matches the key and every value arrives."""
    rclpy = pytest.importorskip("rclpy")
    mod = pytest.importorskip(module)
    node_class = {"tensegrity_simulator": "TensegritySimulator", "collision_monitor": "CollisionMonitor",
                  "locomotion_controller": "LocomotionController", "pose_controller": "PoseControllerNode"}[node_name]
    context = rclpy.context.Context()
    rclpy.init(args=["test", "--ros-args", "--params-file", str(path)], context=context)
    node = None
    try:
        node = getattr(mod, node_class)(context=context)
        assert node.get_name() == node_name
        for name, value in node_section(path, node_name).items():
            got = node.get_parameter(name).value
            assert list(got) == value if isinstance(value, list) else got == value, name
    finally:
        if node is not None:
            close = getattr(node, "close", None)
            if close is not None:
                close()
            node.destroy_node()
        rclpy.shutdown(context=context)


# --- launch file -----------------------------------------------------------------------------------------

def launch_tree(path=LAUNCH):
    source = path.read_text()
    compile(source, str(path), "exec")
    return ast.parse(source)


def module_constants(tree) -> dict:
    """Module-level NAME = <expression of literals, f-strings and earlier such names>, evaluated."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            code = compile(ast.Expression(node.value), str(LAUNCH), "eval")
            try:        # no builtins, only the constants so far: anything else (calls, imports) fails
                out[node.targets[0].id] = eval(code, {"__builtins__": {}}, dict(out))
            except (NameError, TypeError, AttributeError):
                pass
    return out


def launched_nodes(tree):
    """(package, executable) of every launch_ros Node(...) in the launch file."""
    out = []
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", None)) == "Node":
            kw = {k.arg: k.value for k in call.keywords}
            out.append((ast.literal_eval(kw["package"]), ast.literal_eval(kw["executable"])))
    return out


def test_launch_file_compiles_and_declares_the_arguments():
    constants = module_constants(launch_tree())
    declared = {entry[0] for entry in constants["ARGUMENTS"]}
    assert LAUNCH_ARGUMENTS <= declared
    for name, default, _, choices in constants["ARGUMENTS"]:
        assert choices is None or default in choices, name
    for name in ("experiment", "rviz"):
        choices = next(e[3] for e in constants["ARGUMENTS"] if e[0] == name)
        assert {"true", "false"} <= set(choices)


def test_launch_file_nodes_exist():
    nodes = launched_nodes(launch_tree()) + launched_nodes(launch_tree(LAUNCH_SUPPORT))   # RViz: rviz_actions
    packages = {p for p, _ in nodes}
    assert {"tensegrity_sim", "tensegrity_monitor", "robot_state_publisher", "rviz2"} == packages
    bringup_deps = package_dependencies("tensegrity_bringup")
    for package, executable in nodes:
        if repo_package(package):
            assert executable in console_scripts(package), f"{package} has no console script {executable}"
        assert package in bringup_deps, f"tensegrity_bringup/package.xml does not depend on {package}"


def test_launch_file_names_existing_files_and_the_rviz_topics():
    constants = module_constants(launch_tree())
    assert module_constants(launch_tree(LAUNCH_SUPPORT))["PACKAGE"] == "tensegrity_bringup"
    assert repo_package("tensegrity_bringup")
    for key in ("SIM_CONFIG", "MONITOR_CONFIG", "RVIZ_CONFIG"):
        assert (ROOT / "config" / constants[key]).is_file(), constants[key]
    assert (ROOT / "urdf" / constants["URDF_FILE"]).is_file()
    # the topics it remaps into a namespace are exactly those the RViz config subscribes to
    _, displays = rviz_displays()
    assert {"/" + t for t in constants["RVIZ_TOPICS"]} == {t["Value"] for _, t in rviz_topics(displays)}


def test_launch_overrides_are_simulator_parameters():
    declared = pytest.importorskip("tensegrity_sim.simulator_node").PARAMETERS
    tree = launch_tree()
    func = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "simulator_overrides")
    names = set()
    for node in ast.walk(func):
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Tuple):
            names |= {ast.literal_eval(e) for e in node.iter.elts}
        if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "out" \
                and isinstance(node.slice, ast.Constant):
            names.add(node.slice.value)
    assert {"model", "frame_id", "physics_rate", "publish_rate", "experiment.enabled"} <= names
    assert names <= set(declared), sorted(names - set(declared))


# --- Docker --------------------------------------------------------------------------------------------

def dockerfile_instructions(path: Path):
    """(INSTRUCTION, argument) pairs with continuation lines joined and comments dropped."""
    lines, current = [], ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        word, _, rest = current.partition(" ")
        lines.append((word.upper(), rest.strip()))
        current = ""
    return lines


def check_ros2_command(argv, where):
    """A `ros2 launch|run PKG ...` command names a package of this repository and what it installs."""
    if argv[:2] == ["ros2", "launch"]:
        package, launch_file = argv[2], argv[3]
        assert repo_package(package), f"{where}: no src/{package}/package.xml"
        assert package == "tensegrity_bringup" and (ROOT / "launch" / launch_file).is_file(), where
        declared = {e[0]: e for e in module_constants(launch_tree(ROOT / "launch" / launch_file))["ARGUMENTS"]}
        for arg in argv[4:]:
            name, _, value = arg.partition(":=")
            assert name in declared, f"{where}: unknown launch argument {name}"
            choices = declared[name][3] if len(declared[name]) > 3 else None
            assert choices is None or value in choices, f"{where}: {arg}"
    elif argv[:2] == ["ros2", "run"]:
        assert repo_package(argv[2]) and argv[3] in console_scripts(argv[2]), where


def image_path_exists(path: str) -> bool:
    for prefix, local in ((IN_IMAGE, ROOT), (INSTALLED_SHARE, ROOT)):
        if path.startswith(prefix + "/"):
            return (local / path[len(prefix) + 1:]).exists()
    return False


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_is_consistent_with_the_repository(path):
    instructions = dockerfile_instructions(path)
    assert instructions[0][0] == "FROM" and "jazzy" in instructions[0][1]
    assert ("COPY", f". {IN_IMAGE}") in instructions
    runs = " ".join(arg for ins, arg in instructions if ins == "RUN")
    assert "rosdep install --from-paths src --ignore-src" in runs and "colcon build --symlink-install" in runs
    # packages named for colcon, and keys skipped for rosdep, must exist
    for option in ("--packages-select", "--packages-up-to", "--packages-skip"):
        for match in re.finditer(rf"{option}\s+([\w\s]+?)(?:&&|$)", runs):
            for package in match.group(1).split():
                assert repo_package(package), f"{path.name}: {option} {package}"
    all_deps = set().union(*(package_dependencies(p.parent.name) for p in (ROOT / "src").glob("*/package.xml")))
    for match in re.finditer(r"--skip-keys\s+\"?([\w\s]+?)\"?\s*(?:&&|\\|$)", runs):
        for key in match.group(1).split():
            assert key in all_deps, f"{path.name}: skips rosdep key {key} that no package.xml uses"
    # files of the checkout that the image runs
    for file in re.findall(rf"{re.escape(IN_IMAGE)}/[\w./-]+", runs):
        assert image_path_exists(file), f"{path.name}: {file} is not in the repository"
    entrypoint = json.loads(next(arg for ins, arg in instructions if ins == "ENTRYPOINT"))
    assert image_path_exists(entrypoint[0]), entrypoint
    assert os.access(ROOT / entrypoint[0][len(IN_IMAGE) + 1:], os.X_OK), "the entry point is not executable"
    # docker stop sends SIGINT (ros2 launch has no SIGTERM handler), and the entry point runs the command
    # under the supervisor, which waits for the nodes' clean-up (docs/safety.md)
    assert ("STOPSIGNAL", "SIGINT") in instructions
    script = (ROOT / entrypoint[0][len(IN_IMAGE) + 1:]).read_text()
    assert re.search(r"^exec python3 -m tensegrity_ros_common\.supervise -- \"\$@\"$", script, re.M), script
    cmd = json.loads(next(arg for ins, arg in reversed(instructions) if ins == "CMD"))
    check_ros2_command(cmd, f"{path.name} CMD")
    assert ("rviz:=true" in cmd) == path.name.endswith(".rviz")


def test_compose_services_are_consistent():
    compose = yaml.safe_load(COMPOSE.read_text())
    services = compose["services"]
    assert {"sim", "rviz"} <= set(services)
    for name, service in services.items():
        assert service.get("network_mode") == "host" and service.get("ipc") == "host", name
        assert "ROS_DOMAIN_ID" in service.get("environment", {}), name
        build = service["build"]
        context = (COMPOSE.parent / build["context"]).resolve()
        assert context == ROOT and (context / build["dockerfile"]).is_file(), name
        command = service.get("command")
        argv = command if isinstance(command, list) else shlex.split(command or "")
        check_ros2_command(argv, f"compose {name}")
        if argv[:2] == ["ros2", "launch"]:        # stopped with what launch handles, and time for torque off
            assert service.get("stop_signal") == "SIGINT", name
            grace = service.get("stop_grace_period", "10s")
            assert grace.endswith("s") and float(grace[:-1]) >= worst_stop_seconds() + 5, \
                f"compose {name}: stop_grace_period {grace} < the worst case {worst_stop_seconds()} s + 5 s"
        for arg in argv:
            if arg.startswith("/ws/"):
                assert image_path_exists(arg), f"compose {name}: {arg} is not in the repository"
    assert any(d.endswith(":/dev/ttyUSB0") for d in services["hardware"]["devices"])
    assert services["hardware"]["profiles"] == ["hardware"]          # not started by a plain `up`
    rviz = services["rviz"]
    assert "DISPLAY" in rviz["environment"]
    assert any(v.startswith("/tmp/.X11-unix:") for v in rviz["volumes"])


def test_dockerignore_keeps_local_state_out_of_the_image():
    entries = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    for entry in (".git", ".venv", "runs", "**/__pycache__", "**/*.egg-info"):
        assert entry in entries, entry


# --- every launch file ------------------------------------------------------------------------------------

ALL_LAUNCH = sorted((ROOT / "launch").glob("*.launch.py"))


@pytest.mark.parametrize("path", ALL_LAUNCH, ids=lambda p: p.name)
def test_every_launch_file_compiles_and_names_existing_nodes_and_configs(path):
    source = path.read_text()
    tree = ast.parse(source)
    compile(source, str(path), "exec")
    nodes = launched_nodes(tree)
    assert nodes, f"{path.name} starts no node"
    bringup_deps = package_dependencies("tensegrity_bringup")
    for package, executable in nodes:
        if repo_package(package):
            assert executable in console_scripts(package), f"{package} has no console script {executable}"
        assert package in bringup_deps, f"tensegrity_bringup/package.xml does not depend on {package}"
    names = {c.value for c in ast.walk(tree) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    for name in names:
        if name.endswith((".yaml", ".rviz")) and "/" not in name and " " not in name:
            assert (ROOT / "config" / name).is_file(), f"{path.name} names config/{name}, which does not exist"
    assert "generate_launch_description" in {f.name for f in tree.body if isinstance(f, ast.FunctionDef)}


# --- driver and mocap bridge parameter files -----------------------------------------------------------

def _declared_driver(params):
    mod = pytest.importorskip("tensegrity_dynamixel.driver_node")
    declared = dict(mod.PARAMETERS)
    for j in params.get("joints", []):
        declared.update({f"motors.{j}.{k}": v for k, v in mod.MOTOR_PARAMETERS.items()})
    return declared


@pytest.mark.parametrize("name", ["dynamixel_driver", "mocap_bridge"])
def test_driver_and_bridge_configs_are_declared(name):
    path = ROOT / "config" / f"{name}.yaml"
    params = node_section(path, name)
    assert params, f"{path.name} sets no parameters"
    if name == "dynamixel_driver":
        declared = _declared_driver(params)
    else:
        declared = pytest.importorskip("tensegrity_mocap.bridge.node").PARAMETERS
    unknown = sorted(set(params) - set(declared))
    assert not unknown, f"{path.name}: parameters the node does not declare: {unknown}"
    for key, value in params.items():
        default = declared[key][0]
        assert same_parameter_type(value, default), f"{path.name}: {key} = {value!r}, declared {type(default).__name__}"


def test_driver_spool_mapping_matches_the_model(model):
    """The twin only follows the robot if driver and model map motor angles to strings the same way."""
    params = node_section(ROOT / "config" / "dynamixel_driver.yaml", "dynamixel_driver")
    assert params["joints"] == list(model.actuator_names)
    for a, name in enumerate(model.actuator_names):
        p = lambda k: params[f"motors.{name}.{k}"]  # noqa: E731
        assert p("spool_radius") == pytest.approx(model.spool_radius[a])
        assert p("sign") == model.actuator_sign[a]
        assert [p("min_angle"), p("max_angle")] == pytest.approx(list(model.angle_limits[a]))
        assert p("model") in model.actuator_motor[a]        # e.g. 'L54-50-S290-R' in 'Dynamixel PRO L54-...'


@pytest.mark.parametrize("name, module, cls", [("dynamixel_driver", "tensegrity_dynamixel.driver_node", "DynamixelDriver"),
                                               ("mocap_bridge", "tensegrity_mocap.bridge.node", "MocapBridge")])
def test_driver_and_bridge_start_from_their_config_files(name, module, cls):
    """rcl's YAML parser, not PyYAML, reads --params-file (a bare `y` is a boolean there): start the node."""
    rclpy = pytest.importorskip("rclpy")
    mod = pytest.importorskip(module)
    path = ROOT / "config" / f"{name}.yaml"
    context = rclpy.context.Context()
    rclpy.init(args=["test", "--ros-args", "--params-file", str(path), "-p", "autostart:=false"]
               if name == "dynamixel_driver" else ["test", "--ros-args", "--params-file", str(path)], context=context)
    node = None
    try:
        node = getattr(mod, cls)(context=context)
        assert node.get_name() == name
        for key, value in node_section(path, name).items():
            if key == "autostart":          # overridden above so the test opens no serial port
                continue
            got = node.get_parameter(key).value
            assert (list(got) == value) if isinstance(value, list) else got == value, key
    finally:
        if node is not None:
            node.close()
            node.destroy_node()
        rclpy.shutdown(context=context)


# --- launch files fail as a whole --------------------------------------------------------------------------

def support_imports(tree) -> set:
    """Names a launch file imports from tensegrity_bringup.launch_support."""
    return {a.asname or a.name for node in tree.body if isinstance(node, ast.ImportFrom)
            and node.module == LAUNCH_SUPPORT_MODULE for a in node.names}


def module_level_names(tree) -> dict:
    """name -> how many module-level statements bind it (def, class, assignment, import)."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [(a.asname or a.name).split(".")[0] for a in node.names]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for tgt in targets for n in ast.walk(tgt) if isinstance(n, ast.Name)]
        else:
            names = []
        for name in names:
            out[name] = out.get(name, 0) + 1
    return out


def load_launch_support():
    """launch_support.py of this checkout (by path: not whatever tensegrity_bringup is installed)."""
    pytest.importorskip("launch_ros")
    pytest.importorskip("ament_index_python")
    import importlib.util
    spec = importlib.util.spec_from_file_location("launch_support_under_test", LAUNCH_SUPPORT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def node_calls(tree):
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", None)) == "Node":
            kw = {k.arg: k.value for k in call.keywords}
            yield ast.literal_eval(kw["package"]), ast.literal_eval(kw["executable"]), kw


@pytest.mark.parametrize("path", ALL_LAUNCH, ids=lambda p: p.name)
def test_launch_nodes_are_required_and_optional_ones_checked(path):
    """Every node of this repository ends the launch when it exits, with its exit code (on_exit=required);
    nodes of other packages (robot_state_publisher, RViz) are started only after checking they are
    installed; the Dynamixel driver gets time to turn torque off before launch escalates to SIGKILL."""
    tree = launch_tree(path)
    # required(...) and installed(...) are the shared helpers of launch_support.py, bound once in the file
    shared = support_imports(tree)
    bound = module_level_names(tree)
    for helper in ("required", "installed"):
        if any(isinstance(n, ast.Name) and n.id == helper for n in ast.walk(tree)):
            assert helper in shared, f"{path.name}: {helper} is not imported from {LAUNCH_SUPPORT_MODULE}"
            assert bound[helper] == 1, f"{path.name}: {helper} is bound again besides the import"
    checked = {(c.args[0].value, c.args[1].value) for c in ast.walk(tree)
               if isinstance(c, ast.Call) and getattr(c.func, "id", None) == "installed" and len(c.args) == 2}
    for package, executable, kw in node_calls(tree):
        if repo_package(package):
            on_exit = kw.get("on_exit")
            assert isinstance(on_exit, ast.Call) and getattr(on_exit.func, "id", None) == "required", \
                f"{path.name}: {executable} is not on_exit=required(...)"
        else:
            assert (package, executable) in checked, f"{path.name}: {package} is started without installed(...)"
        if package == "tensegrity_dynamixel":
            support = module_constants(launch_tree(LAUNCH_SUPPORT))
            consts = {**{k: v for k, v in support.items() if k in shared}, **module_constants(tree)}
            for key in ("sigterm_timeout", "sigkill_timeout"):
                assert key in kw, f"{path.name}: the driver has no {key}"
                value = consts[kw[key].id] if isinstance(kw[key], ast.Name) else ast.literal_eval(kw[key])
                assert float(value) >= 10.0, f"{path.name}: driver {key} {value} s"


def test_launch_support_defines_the_shared_helpers_and_only_launch_files_import_it():
    """launch_support.py needs launch, launch_ros and ament_index_python: only the launch files (ROS installs)
    import it, not the rest of the package (the pip-only bringup)."""
    tree = launch_tree(LAUNCH_SUPPORT)
    functions = {f.name for f in tree.body if isinstance(f, ast.FunctionDef)}
    assert {"required", "installed", "bringup_share", "config_dir", "driver_overrides"} <= functions
    for path in sorted(BRINGUP_PACKAGE.rglob("*.py")):
        if path == LAUNCH_SUPPORT:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):      # from X import Y: X and X.Y (Y may be a module)
                base = "." * node.level + (node.module or "")
                modules = [base] + [f"{base}.{a.name}".replace("..", ".") for a in node.names]
            else:
                continue
            for module in modules:
                assert not module.endswith("launch_support") and module.split(".")[0] not in ("launch", "launch_ros"), \
                    f"{path.relative_to(ROOT)} imports {module}"
    users = [p.name for p in ALL_LAUNCH if support_imports(launch_tree(p))]
    assert users == [p.name for p in ALL_LAUNCH], "every launch file takes its helpers from launch_support"


def test_required_shuts_the_launch_down_and_fails_it_on_an_error_exit():
    support = load_launch_support()
    from types import SimpleNamespace

    from launch.actions import OpaqueFunction, Shutdown
    on_exit = support.required("the thing")
    clean = SimpleNamespace(returncode=0, process_name="thing-1")
    actions = on_exit(clean, SimpleNamespace(is_shutdown=False))
    assert len(actions) == 1 and isinstance(actions[0], Shutdown)
    assert on_exit(clean, SimpleNamespace(is_shutdown=True)) is None        # already shutting down
    for code in (2, -9):
        actions = on_exit(SimpleNamespace(returncode=code, process_name="thing-1"), SimpleNamespace(is_shutdown=True))
        assert len(actions) == 1 and isinstance(actions[0], OpaqueFunction)
        with pytest.raises(RuntimeError, match=rf"the thing \(thing-1\) exited with code {code}"):
            actions[0].execute(None)


def test_launch_support_falls_back_to_the_checkout_without_the_share_directory(monkeypatch):
    support = load_launch_support()

    def not_found(package):
        raise support.PackageNotFoundError(package)
    monkeypatch.setattr(support, "get_package_share_directory", not_found)
    monkeypatch.setattr(support, "get_package_prefix", not_found)
    launch_file = str(ROOT / "launch" / "simulation.launch.py")
    assert support.bringup_share(launch_file) == ROOT
    assert support.config_dir(launch_file) == ROOT / "config" and (ROOT / "config" / "dynamixel_driver.yaml").is_file()
    assert support.installed("rviz2", "rviz2") is False
    overrides = support.driver_overrides("/dev/ttyUSB0", "false")
    assert set(overrides) == {"port", "experiment.enabled"} and overrides["experiment.enabled"] is False
    assert support.driver_overrides("", "") == {}


@pytest.mark.parametrize("package", sorted(p.parent.name for p in (ROOT / "src").glob("*/setup.py")))
def test_colcon_test_finds_pytest_with_a_current_setuptools(package, monkeypatch):
    """Issue 21 #10: colcon test reads a package's test dependencies from its setup() metadata; setuptools
    72+ drops ``tests_require`` (colcon then ran 0 tests and reported OK). The distribution this setuptools
    builds from setup.py's arguments must name pytest under extras_require['test'], where colcon's
    has_test_dependency finds it."""
    import runpy
    import warnings

    import setuptools
    from setuptools.dist import Distribution
    captured = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: captured.update(kw))
    monkeypatch.chdir(ROOT / "src" / package)
    runpy.run_path("setup.py")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # "Unknown distribution option" for what setuptools dropped
        dist = Distribution(captured)
    test_deps = (getattr(dist, "extras_require", None) or {}).get("test", [])
    assert any(re.split(r"[ <=>!]", d)[0] == "pytest" for d in test_deps), (package, test_deps)


def test_every_test_runs_under_colcon_test_and_test_sh():
    """Issue 33 #14: colcon test runs only the tests in a package's own test folder (a top-level test/ was
    never run by it); ./test.sh runs pytest.ini's testpaths. Every test file of the checkout is in a
    src/<package>/test folder, and pytest.ini lists exactly those folders."""
    outside = [str(p.relative_to(ROOT)) for p in ROOT.rglob("test_*.py")
               if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)
               and not (p.parent.name == "test" and p.parent.parent.parent == ROOT / "src")]
    assert outside == [], f"tests outside every package (colcon test never runs them): {outside}"
    ini = configparser.ConfigParser()
    ini.read(ROOT / "pytest.ini")
    listed = set(ini["pytest"]["testpaths"].split())
    folders = {f"src/{p.parent.name}/test" for p in (ROOT / "src").glob("*/setup.py") if (p.parent / "test").is_dir()}
    assert listed == folders, f"pytest.ini testpaths {sorted(listed)} != the packages' test folders {sorted(folders)}"


def node_stop_timeouts(call, support_constants) -> tuple:
    """(sigterm_timeout, sigkill_timeout) [s] a launch_ros Node(...) call gives its process (``**STOP_TIMEOUTS``
    or the two keywords; None for one not given: launch's default 5 s)."""
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    if any(k.arg is None and getattr(k.value, "id", "") == "STOP_TIMEOUTS" for k in call.keywords):
        stop = support_constants["STOP_TIMEOUTS"]
        return float(stop["sigterm_timeout"]), float(stop["sigkill_timeout"])
    values = [kw.get(name) for name in ("sigterm_timeout", "sigkill_timeout")]
    return tuple(None if v is None else float(support_constants[v.id] if isinstance(v, ast.Name)
                                               else ast.literal_eval(v)) for v in values)


def launch_node_calls():
    """(file name, Node(...) call) of every launch file and the launch files' helpers."""
    for path in ALL_LAUNCH + [LAUNCH_SUPPORT]:
        for call in ast.walk(launch_tree(path)):
            if isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", None)) == "Node":
                yield path.name, call


def worst_stop_seconds() -> float:
    """s from SIGINT to the last process ended in the worst case under the supervisor (docker/entrypoint.sh):
    the longest sigterm + sigkill timeout launch gives a node, then the supervisor's grace twice."""
    from tensegrity_ros_common.supervise import DEFAULT_GRACE
    support = module_constants(launch_tree(LAUNCH_SUPPORT))
    longest = max(sum(node_stop_timeouts(call, support)) for _, call in launch_node_calls())
    return longest + 2 * DEFAULT_GRACE


def test_every_launched_node_has_stop_timeouts_that_cover_its_clean_up():
    """Issue 33 #13: launch's defaults (SIGTERM 5 s after SIGINT) cut the clean-up of a node on a loaded
    machine short; every Node(...) states its timeouts (launch_support: the driver's 10 + 10 s, the other
    nodes' STOP_TIMEOUTS, 8 + 5 s: their clean-up took 0.6-1.4 s at load 15-21, test_stop_under_load.py)."""
    support = module_constants(launch_tree(LAUNCH_SUPPORT))
    for name, call in launch_node_calls():
        sigterm, sigkill = node_stop_timeouts(call, support)
        assert sigterm is not None and sigkill is not None, f"{name}:{call.lineno}: a Node without stop timeouts"
        assert sigterm >= 8 and sigkill >= 5, f"{name}:{call.lineno}: timeouts {sigterm} + {sigkill} s"
    assert worst_stop_seconds() == 40.0        # the driver's 10 + 10 s, then the supervisor's 10 + 10 s
