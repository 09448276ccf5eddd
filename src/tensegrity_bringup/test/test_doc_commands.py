"""The commands the handbook shows run as written, and do what the pages say.

README.md, docs/controllers.md, docs/locomotion.md and docs/manipulation.md: every line of every ```bash block
(continuation lines joined, comments dropped) is run, in the order the pages give them, in one scratch
directory with the repository's ``.venv`` linked in, except by the rules of SKIP_RULES (the commands they skip
are listed in SKIPPED and asserted, so the list cannot grow unnoticed). Each must exit 0, and its outputs are
checked (CHECKS: the files it writes, a rolling run's faces and progress, a plate goal's final error). The
other pages' ``.venv/bin/tensegrity ...`` engine commands run too, unless they name a placeholder the reader
fills in. Full durations in the slow tier; the default tier runs the README's rolling robot with
TENSEGRITY_MAX_DURATION shortening its ``--duration`` (docs/testing.md), checks the documented plate goals
with inverse statics and the rolling report's numbers against a recording whose motion is known.
docs/live_view.md's commands run shortened too (slow tier): while a ``--live`` run lasts, a WebSocket client at
the address the page gives sees every topic the saved layout reads advertised, with JSON schemas the apps read."""
import ast
import json
import math
import os
import re
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml

from tensegrity_ros_common.domains import claim_domain

ROOT = Path(__file__).resolve().parents[3]
MAX_DURATION_ENV = "TENSEGRITY_MAX_DURATION"
PAGES = ("README.md", "docs/controllers.md", "docs/locomotion.md", "docs/manipulation.md")
SKIP_RULES = (("ros2 ", "needs a ROS 2 install: ros2 launch is not installable from PyPI (launch tests: "
                        "test_launch_failures.py, test_simulation_launch.py)"),
              ("./setup.sh", "sets up the machine (creates .venv, runs the main job): the venv these tests run in"),
              ("./test.sh", "runs this test suite: the tests run inside it"))
LIVE_LAUNCH = "ros2 launch tensegrity_bringup simulation.launch.py live_view:=true live_view_port:=8765"
SKIPPED = [("README.md", "./setup.sh"), ("README.md", "./test.sh"),
           ("docs/controllers.md", "ros2 launch tensegrity_bringup locomotion.launch.py model:=$PWD/superball.yaml"),
           ("docs/controllers.md", "ros2 launch tensegrity_bringup manipulation.launch.py"),
           ("docs/controllers.md", "ros2 launch tensegrity_bringup policy.launch.py model:=$PWD/superball.yaml "
                                   "policy:=$PWD/config/policies/superball_rolling.npz")]
# other pages' engine commands: skipped when they name something the reader supplies (their own files, hosts)
PLACEHOLDERS = ("MODEL", "HOST", "cases.yaml", "[", "...", "my_inputs.csv", "segs.csv", "runs/exp2", "OUT")
SHORTEN = {"--monte-carlo 100": "--monte-carlo 4", "--duration 5 ": "--duration 0.5 ",
           "--duration 10 ": "--duration 0.5 "}
FRONT_DOOR_SECONDS = 4.0    # s: the default tier's shortened rolling run (start-up comes on top)
PLATE_ERROR_MM, PLATE_ERROR_DEG = 2.0, 0.5     # the pose controller's acceptance (controllers.md, measured 0.6 mm)
INPUT_MARGIN = 0.5          # a documented plate goal needs at most half of each input's range from zero
LIVE_PAGE = "docs/live_view.md"     # its runs last minutes: run shortened (test_the_live_view_page_runs_shortened)
LIVE_URL = "ws://127.0.0.1:8765"    # where the page says to connect
LIVE_SECONDS = 15.0         # s: TENSEGRITY_MAX_DURATION of the live page's runs (start-up comes on top)


def bash_lines(page: str) -> list:
    """The command lines of the ```bash blocks of ``page`` (relative to the repository)."""
    out, inside, pending = [], False, ""
    for line in (ROOT / page).read_text().splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```bash" and not inside
            continue
        if not inside:
            continue
        pending += (" " if pending else "") + line.strip()
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        cmd = re.sub(r"(^|\s+)#.*$", "", pending).strip()
        pending = ""
        if cmd:
            out.append(cmd)
    return out


def skip_reason(cmd: str):
    return next((why for prefix, why in SKIP_RULES if cmd.startswith(prefix)), None)


def page_commands() -> tuple:
    """([(page, command)] to run, [(page, command)] skipped by SKIP_RULES) of PAGES, in order."""
    run, skipped = [], []
    for page in PAGES:
        for cmd in bash_lines(page):
            (skipped if skip_reason(cmd) else run).append((page, cmd))
    return run, skipped


def other_engine_commands() -> list:
    """[(page, command)] of the runnable ``.venv/bin/tensegrity`` lines of the other pages, shortened."""
    out = []
    for path in sorted((ROOT / "docs").glob("*.md")):
        page = path.relative_to(ROOT).as_posix()
        if page in PAGES or page == LIVE_PAGE:
            continue
        for cmd in bash_lines(page):
            if cmd.startswith(".venv/bin/tensegrity ") and not any(p in cmd for p in PLACEHOLDERS):
                for long, short in SHORTEN.items():
                    cmd = (cmd + " ").replace(long, short).strip()
                out.append((page, cmd))
    return out


def run(cmd: str, cwd: Path, env_extra=None) -> subprocess.CompletedProcess:
    """``cmd`` as a shell would split it, on a private ROS domain, at full duration unless ``env_extra`` says."""
    env = dict(os.environ, MPLBACKEND="Agg", ROS_DOMAIN_ID=str(claim_domain()), PYTHONUNBUFFERED="1")
    env.pop(MAX_DURATION_ENV, None)
    env.update(env_extra or {})
    return subprocess.run(shlex.split(cmd), cwd=cwd, capture_output=True, text=True, timeout=900, env=env)


def scratch(tmp_path) -> Path:
    os.symlink(ROOT / ".venv", tmp_path / ".venv")
    return tmp_path


def option(cmd: str, name: str):
    words = shlex.split(cmd)
    return words[words.index(name) + 1] if name in words else None


# --- what each kind of command must have done ------------------------------------------------------
def check_new(cmd, r, cwd, full):
    assert (cwd / option(cmd, "-o")).is_file()


def check_workspace(cmd, r, cwd, full):
    out = cwd / option(cmd, "--out")
    assert (out / "workspace.npz").is_file() and (out / "workspace.png").stat().st_size > 10_000


def recording_of(cmd, cwd) -> Path:
    report = option(cmd, "--report")
    return cwd / (option(cmd, "--record") or f"{report}/{Path(report).name}.mcap")


def check_rolling(cmd, r, cwd, full):
    """The report's files, its numbers those of the recording; a full run rolled toward the heading."""
    out = cwd / option(cmd, "--report")
    summary = json.loads((out / "summary.json").read_text())
    rolling = summary["rolling"]
    assert (out / "rolling.png").stat().st_size > 10_000 and not (out / "plates.png").exists()
    assert "no frames" in summary["skipped"]["plates.png"] and "no plates.png" in r.stdout
    assert re.search(rf"rolling: {rolling['faces_changed']} faces changed", r.stdout)
    check_against_recording(rolling, recording_of(cmd, cwd))
    print(f"rolling: {json.dumps({k: v for k, v in rolling.items() if k != 'faces'})}")
    if full:      # 60 s at 5-12 s per face (locomotion.md): at least three faces, toward the heading
        assert rolling["faces_changed"] >= 3 and int(rolling["controller"]["faces_changed"]) >= 3, rolling
        assert rolling["progress_m"] >= 0.5 and rolling["min_bar_clearance_m"] > 0, rolling


def check_policy(cmd, r, cwd, full):
    """The policy controller ran (its line in the output) and, in a full run, the robot rolled along +x."""
    assert "policy controller: running" in r.stdout, r.stdout[-2000:]
    rolling = json.loads((cwd / option(cmd, "--report") / "summary.json").read_text())["rolling"]
    check_against_recording(rolling, recording_of(cmd, cwd))
    if full:      # 30 s: the committed policy rolls ~1.5 m in the first 12 s (learning.md)
        assert rolling["progress_m"] >= 0.5, rolling


def check_plate_goal(cmd, r, cwd, full):
    """The printed controller state (reachable, its error) and, from the recording, every measured plate pose of
    the last second near the goal."""
    m = re.search(r"pose controller: (\w+), plate error ([\d.]+) mm, ([\d.]+) deg; reachable (\w+)", r.stdout)
    assert m and m.group(4) == "True", r.stdout[-2000:]
    assert (cwd / option(cmd, "--report") / "plates.png").stat().st_size > 10_000
    if full:     # 25 s: the move at 0.01 m/s takes a few seconds, the ringing settles after
        miss_mm, miss_deg = plate_miss(recording_of(cmd, cwd), option(cmd, "--plate-goal"))
        print(f"plate goal: {m.group(0)}; measured over the last second within {miss_mm:.3f} mm, {miss_deg:.3f} deg")
        assert miss_mm < PLATE_ERROR_MM and miss_deg < PLATE_ERROR_DEG, (miss_mm, miss_deg)


def plate_miss(mcap, goal_text) -> tuple:
    """(mm, deg): the largest distance and angle of the recorded plate_pose/c2 of the last second from the goal."""
    from tensegrity_bringup.drive import parse_numbers, plate_goal_frame
    from tensegrity_engine.frames import rotation_angle
    from tensegrity_ros_common.conversions import pose_to_frame
    from tensegrity_ros_common.recording import iter_messages
    goal = plate_goal_frame(parse_numbers("--plate-goal", goal_text, 6))
    poses = [(t * 1e-9, pose_to_frame(msg.pose)) for name, msg, t in iter_messages(mcap) if name == "/plate_pose/c2"]
    last = [C for t, C in poses if t > poses[-1][0] - 1.0]
    return (1e3 * max(np.linalg.norm(C[:3, 3] - goal[:3, 3]) for C in last),
            math.degrees(max(float(rotation_angle(C, goal)) for C in last)))


CHECKS = ((r"^\.venv/bin/tensegrity new ", check_new), (r"^\.venv/bin/tensegrity workspace ", check_workspace),
          (r"tensegrity-bringup .*--locomotion", check_rolling),
          (r"tensegrity-bringup .*--plate-goal", check_plate_goal), (r"tensegrity-bringup .*--policy", check_policy))


def check_output(cmd, r, cwd, full: bool):
    for pattern, check in CHECKS:
        if re.search(pattern, cmd):
            check(cmd, r, cwd, full)


def check_against_recording(rolling: dict, mcap):
    """The report's start, end, distance and duration recomputed from the recorded node_positions."""
    from tensegrity_engine.locomotion.support import centre_of_mass
    from tensegrity_ros_common.description import model_from_description
    from tensegrity_ros_common.recording import read_recording
    rec = read_recording(mcap)
    model = model_from_description(rec["description"])
    rows = sorted(rec["positions"], key=lambda p: p[0])
    first, last = (centre_of_mass(model, model.from_physical(np.array(rows[k][2]))) for k in (0, -1))
    assert np.allclose(rolling["start_xy_m"], first[:2], atol=1e-9)
    assert np.allclose(rolling["end_xy_m"], last[:2], atol=1e-9)
    assert rolling["distance_m"] == pytest.approx(np.hypot(*(last[:2] - first[:2])), abs=1e-9)
    assert rolling["duration_s"] == pytest.approx(rows[-1][0] - rows[0][0], abs=1e-6)


# --- default tier ------------------------------------------------------------------------------
def test_the_pages_commands_are_found_and_the_skips_are_exactly_the_listed_ones():
    commands, skipped = page_commands()
    for page, cmd in skipped:
        print(f"skipped {page}: {cmd}  ({skip_reason(cmd)})")
    assert skipped == SKIPPED
    assert [c for p, c in commands if p == "README.md"][:2] == [
        ".venv/bin/tensegrity new superball --friction 0.8 -o superball.yaml",
        ".venv/bin/tensegrity-bringup --processes --locomotion --model superball.yaml --heading 90 --duration 60 "
        "--report runs/roll"]
    assert len(commands) == 8, commands      # README 4, controllers.md 3, manipulation.md 1 (locomotion.md: Python)
    # every command is checked for more than its exit code; a bringup run shows its outcome only with --report
    assert all(any(re.search(p, c) for p, _ in CHECKS) for _, c in commands), commands
    assert all("--report " in c for _, c in commands if "tensegrity-bringup" in c), commands
    assert (".venv/bin/tensegrity-bringup --processes --locomotion --model superball.yaml --heading 90 --duration 60 "
            "--record runs/roll/roll.mcap --report runs/roll") in bash_lines("docs/ros2.md")   # continuations joined
    live = bash_lines(LIVE_PAGE)
    assert [c for c in live if skip_reason(c)] == [LIVE_LAUNCH], live
    assert sum("tensegrity-bringup --live " in c and "--report " in c for c in live) == 2, live


def documented_plate_goals() -> list:
    """[(where, 4x4 goal)]: every --plate-goal of the pages and docs/ros2.md, and the manipulation launch
    file's plate_goal example."""
    from tensegrity_bringup.drive import parse_numbers, plate_goal_frame
    from tensegrity_ros_common.conversions import pose_to_frame
    from geometry_msgs.msg import Point, Pose, Quaternion
    out = [(f"{page}: {cmd}", plate_goal_frame(parse_numbers("--plate-goal", option(cmd, "--plate-goal"), 6)))
           for page in PAGES + ("docs/ros2.md",) for cmd in bash_lines(page) if "--plate-goal" in cmd]
    doc = ast.get_docstring(ast.parse((ROOT / "launch/manipulation.launch.py").read_text()))
    text = re.search(r"PoseStamped '(.*?)'", doc, re.S).group(1)
    pose = yaml.safe_load(" ".join(text.split()))["pose"]
    q = Quaternion(**{k: float(pose["orientation"].get(k, 0.0)) for k in "xyzw"})
    launch_goal = Pose(position=Point(**pose["position"]), orientation=q)
    out.append(("launch/manipulation.launch.py", pose_to_frame(launch_goal)))
    return out


def test_the_documented_plate_goals_are_reachable_with_margin():
    """The stacked manipulator's C2 reaches every plate goal the docs give (inverse statics within 1 mm and
    0.2 deg, every string taut), with the inputs within half their range: a goal on the workspace's edge would
    be missed on a plant a little stiffer than the model (manipulation.md)."""
    from tensegrity_engine import load_model
    from tensegrity_engine.control import inverse_statics
    model = load_model("stacked_manipulator")
    goals = documented_plate_goals()
    assert len(goals) == 4, [w for w, _ in goals]
    for where, goal in goals:
        res = inverse_statics(model, "C2", goal)
        share = float(np.max(np.abs(res.u) / np.max(np.abs(model.u_limits), axis=1)))
        print(f"{where}: {res.message}, miss {1e3 * res.miss_position:.4f} mm, inputs at {share:.0%} of their limits")
        assert res.reachable, (where, res.message)
        assert share <= INPUT_MARGIN, (where, share)


def test_the_readme_front_door_runs_shortened(tmp_path):
    """README's rolling commands as written (the run shortened by TENSEGRITY_MAX_DURATION): ``--report DIR``
    alone records to DIR/<name>.mcap and reports the rolling run, its numbers those of the recording."""
    commands = [c for p, c in page_commands()[0] if p == "README.md"][:2]
    cwd = scratch(tmp_path)
    for cmd in commands:
        r = run(cmd, cwd, {MAX_DURATION_ENV: str(FRONT_DOOR_SECONDS)})
        print(r.stdout[-3000:], r.stderr[-3000:])
        assert r.returncode == 0, (cmd, r.stderr[-2000:])
        check_output(cmd, r, cwd, full=False)
    assert f"--duration 60 s shortened to {FRONT_DOOR_SECONDS:g} s by {MAX_DURATION_ENV}" in r.stdout
    assert (cwd / "runs/roll/roll.mcap").is_file() and "recorded" in r.stdout
    rolling = json.loads((cwd / "runs/roll/summary.json").read_text())["rolling"]
    assert rolling["heading_deg"] == 90.0 and rolling["duration_s"] >= FRONT_DOOR_SECONDS - 1.0   # s: first message


def test_the_duration_cap_and_the_default_recording():
    """TENSEGRITY_MAX_DURATION shortens a run (also one without --duration) and refuses nonsense; --report DIR
    alone records to DIR/<DIR's name>.mcap."""
    from tensegrity_bringup.bringup import default_recording
    from tensegrity_bringup.bringup import capped_duration
    assert capped_duration(60.0, None) == (60.0, "")
    assert capped_duration(3.0, "4") == (3.0, "")
    assert capped_duration(60.0, "4")[0] == 4.0 and capped_duration(None, "4")[0] == 4.0   # until Ctrl-C: capped too
    for bad in ("0", "-1", "nan", "inf", "soon"):
        with pytest.raises(ValueError, match=MAX_DURATION_ENV):
            capped_duration(60.0, bad)
    assert math.isfinite(capped_duration(None, "1e3")[0])
    assert default_recording("runs/roll") == Path("runs/roll/roll.mcap")
    assert default_recording(".").name == f"{Path.cwd().name}.mcap"


# --- slow tier ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_pages_commands_run_as_written(tmp_path):
    """Every command of PAGES at its full duration, then the other pages' engine commands (exit code)."""
    cwd = scratch(tmp_path)
    done, failures = {}, []
    for page, cmd in page_commands()[0]:
        if cmd in done:
            print(f"{page}: `{cmd}` ran for {done[cmd]} already")
            continue
        r = run(cmd, cwd)
        print(f"{page}: `{cmd}` exited {r.returncode}\n{r.stdout[-1500:]}")
        try:
            assert r.returncode == 0, r.stderr[-1000:]
            check_output(cmd, r, cwd, full=True)
        except (AssertionError, AttributeError, KeyError, OSError, ValueError) as exc:
            failures.append(f"{page}: `{cmd}`: {exc}")
        done[cmd] = page
    for page, cmd in other_engine_commands():
        r = run(cmd, cwd)
        if r.returncode != 0:
            failures.append(f"{page}: `{cmd}` exited {r.returncode}: {(r.stderr or r.stdout)[-400:]}")
    assert len(other_engine_commands()) >= 8
    assert not failures, "\n".join(failures)



def advertised_channels(url: str, wanted: set, timeout: float) -> dict:
    """{topic: channel} the Foxglove WebSocket server at ``url`` advertises to a client (subprotocol
    foxglove.sdk.v1, as the Foxglove app connects), read until all of ``wanted`` came or ``timeout`` [s] passed;
    the connection is retried while the server starts."""
    import time
    from websockets.exceptions import WebSocketException
    from websockets.sync.client import connect
    deadline, seen = time.monotonic() + timeout, {}
    while time.monotonic() < deadline and not wanted <= set(seen):
        try:
            with connect(url, subprotocols=["foxglove.sdk.v1"], open_timeout=2.0) as ws:
                while time.monotonic() < deadline and not wanted <= set(seen):
                    frame = ws.recv(timeout=max(0.1, deadline - time.monotonic()))
                    msg = json.loads(frame) if isinstance(frame, str) else {}
                    if msg.get("op") == "advertise":
                        seen.update({c["topic"]: c for c in msg["channels"]})
        except (OSError, TimeoutError, WebSocketException, json.JSONDecodeError):
            time.sleep(0.5)
    return seen


@pytest.mark.slow
def test_the_live_view_page_runs_shortened(tmp_path):
    """docs/live_view.md's commands as written, shortened by TENSEGRITY_MAX_DURATION: each ``--live`` run prints
    where to connect, serves every topic the saved layout reads at the page's address while it runs, exits 0
    and writes its report."""
    from test_foxglove_layout import LAYOUT, app_schema_problems, subscribed_topics
    wanted = subscribed_topics(json.loads(LAYOUT.read_text()))
    cwd = scratch(tmp_path)
    for cmd in [c for c in bash_lines(LIVE_PAGE) if not skip_reason(c)]:
        if "--live" not in cmd:
            assert run(cmd, cwd).returncode == 0, cmd
            continue
        import socket
        with socket.socket() as probe:      # another server there would answer for the run under test
            assert probe.connect_ex(("127.0.0.1", 8765)) != 0, f"{LIVE_URL} is taken by another program"
        env = dict(os.environ, MPLBACKEND="Agg", ROS_DOMAIN_ID=str(claim_domain()), PYTHONUNBUFFERED="1")
        env[MAX_DURATION_ENV] = str(LIVE_SECONDS)
        with subprocess.Popen(shlex.split(cmd), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) as proc:
            seen = advertised_channels(LIVE_URL, wanted, timeout=180.0)   # s: start-up under load, then the run
            out, err = proc.communicate(timeout=600)
        print(cmd, out[-3000:], err[-3000:], sorted(seen), sep="\n")
        assert wanted <= set(seen), sorted(wanted - set(seen))
        schemas = {t: json.loads(c["schema"]) for t, c in seen.items() if c.get("schemaEncoding") == "jsonschema"}
        assert {"/tensions", "/safety"} <= set(schemas), seen
        assert not any(app_schema_problems(s) for s in schemas.values()), schemas     # the apps can read them
        assert proc.returncode == 0, (cmd, err[-2000:])
        assert f"{LIVE_URL}, then import docs/foxglove/tensegrity_layout.json" in out
        assert (cwd / option(cmd, "--report") / "summary.json").is_file()
