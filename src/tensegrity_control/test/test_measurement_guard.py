"""MeasurementGuard without ROS: which node_positions are the robot's own, on a clock the test moves."""
import numpy as np
import pytest

from tensegrity_control.measurement_guard import WINDOW, MeasurementGuard
from tensegrity_engine import load_model
from tensegrity_engine.cli.app import main as tensegrity


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "superball.yaml"
    assert tensegrity(["new", "superball", "-o", str(path)]) == 0
    return load_model(str(path))


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_unseen_nodes_noise_and_rolling_speed_are_accepted(model):
    clock = Clock()
    guard = MeasurementGuard(model, clock)
    X = model.positions.copy()
    rng = np.random.default_rng(0)
    for k in range(100):                         # 2 s at 50 Hz, the robot shifting at 1 m/s, 1 mm noise
        clock.t += 0.02
        Y = X + [0.02 * k, 0.0, 0.0] + rng.normal(0.0, 1e-3, X.shape)
        Y[k % len(X)] = np.nan                   # one node unseen in turn
        guard.accept(Y)
    assert guard.hold_reason() == "" and not guard.take_relocation()


def test_a_jump_holds_and_a_lasting_new_place_is_taken_once(model):
    """Alternating between two places: rejected while both come; only the new place for WINDOW: taken, once."""
    clock = Clock()
    guard = MeasurementGuard(model, clock)
    X = model.positions.copy()
    guard.accept(X)
    for k in range(50):
        clock.t += 0.02
        if k % 2:
            with pytest.raises(ValueError, match="jumped"):
                guard.accept(X + [1.0, 0.5, 0.0])
        else:
            guard.accept(X)
    assert "jumped" in guard.hold_reason()
    taken = 0
    for k in range(int(1.5 * WINDOW / 0.02)):
        clock.t += 0.02
        try:
            guard.accept(X + [1.0, 0.5, 0.0])
            taken += 1
        except ValueError:
            assert taken == 0, "a jump after the new place was taken"
    assert taken and guard.take_relocation() and not guard.take_relocation()
    clock.t += WINDOW + 0.01
    guard.accept(X + [1.0, 0.5, 0.0])
    assert guard.hold_reason() == ""


def test_two_publishers_hold_until_one_is_silent_for_the_window(model):
    clock = Clock()
    guard = MeasurementGuard(model, clock)
    guard.heard("a")
    guard.heard("b")
    assert "2 publishers" in guard.hold_reason()
    clock.t += WINDOW / 2
    guard.heard("a")
    clock.t += WINDOW * 0.6
    assert guard.hold_reason() == "" and guard.publishers() == 1


@pytest.mark.parametrize("change, words", [
    (lambda X: 1.05 * X, "measures"),             # a 5 % larger robot of the same node count
    (lambda X: np.where(np.arange(len(X))[:, None] == 0, np.inf, X), "infinite"),
    (lambda X: np.full_like(X, np.nan), "unseen"),
])
def test_other_models_and_bad_values_are_rejected(model, change, words):
    guard = MeasurementGuard(model, Clock())
    with pytest.raises(ValueError, match=words):
        guard.accept(change(model.positions.copy()))
    assert words in guard.hold_reason()


def test_a_stalled_process_does_not_count_the_stall_as_time_the_robot_moved(model):
    """The node took no message for 0.3 s (a loaded CPU) and then gets the queued ones: another robot's
    positions 2.2 m away, which waited 0.28 s in the queue (or are stamped 20 ms after the last), are still a
    jump (0.3 s at 10.8 m/s would allow 3.4 m)."""
    X = model.positions.copy()
    far = X + [2.0, 1.0, 0.0]
    for waited, stamps in [(0.28, (0.0, 0.0)), (0.0, (100.0, 100.02))]:
        clock = Clock()
        guard = MeasurementGuard(model, clock)
        guard.accept(X, stamp=stamps[0])
        clock.t += 0.3
        with pytest.raises(ValueError, match="jumped"):
            guard.accept(far, waited=waited, stamp=stamps[1])


def test_messages_reordered_by_their_queue_waits_are_no_jump(model):
    """Through ROS a message may have waited longer in the queue than the one before it, so its arrival (receipt
    less the wait) precedes that one's by a few ms: a 1 cm move then is no jump (a through-ROS run rejected
    'a node jumped 0.01 m in -0.02 s' and held for a second, three times in 110 s)."""
    clock = Clock()
    guard = MeasurementGuard(model, clock)
    X = model.positions.copy()
    guard.accept(X)
    clock.t += 0.001
    guard.accept(X + [0.01, 0.0, 0.0], waited=0.021)
    assert guard.hold_reason() == ""
