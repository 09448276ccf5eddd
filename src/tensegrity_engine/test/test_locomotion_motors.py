"""Rolling robots made by ``tensegrity new TEMPLATE --motors``: the planner's bar-bar clearance rows (the
linear program keeps bars apart to first order) and the three-bar prism of the Lagrangian paper tipping off
its base triangle with its bars apart."""
import numpy as np
import pytest

from tensegrity_engine.cli import main
from tensegrity_engine.locomotion import GaitPlanner
from tensegrity_engine.locomotion.bar_clearance import BarClearance
from tensegrity_engine.locomotion.closed_loop import at_rest
from tensegrity_engine.model.load import load_model


@pytest.fixture(scope="module")
def threebar(tmp_path_factory):
    out = tmp_path_factory.mktemp("threebar") / "threebar.yaml"
    assert main(["new", "threebar", "--motors", "all", "-o", str(out)]) == 0
    return load_model(out)


def test_clearance_rows_are_the_clearance_gradient(threebar):
    """A du of the rows equals the first-order change of each near pair's clearance (finite differences of the
    exact capsule clearance along the node motion dX du), and b is the clearance above the floor."""
    from tensegrity_engine.collision.capsules import check
    bars = BarClearance(threebar)
    X = threebar.positions
    rng = np.random.default_rng(1)
    dX = rng.standard_normal((threebar.n_nodes, 3, len(threebar.actuator_names)))
    A, b = bars.rows(X, dX, 0.01, 1.0)                   # every pair nearer than 1 m: all three
    c0 = check(bars.elements, X).clearance
    assert A.shape == (3, 9) and np.allclose(b, c0 - 0.01)
    du = 1e-7 * rng.standard_normal(9)                   # m: small enough that the closest points stay put
    c1 = check(bars.elements, X + dX @ du).clearance
    # the rows are minus the gradient (A du <= b keeps the clearance); second order: |dX du|^2 / distance ~ 1e-12
    assert np.allclose(-(A @ du), c1 - c0, atol=1e-11, rtol=1e-4)
    A, b = bars.rows(X, dX, 0.01, 0.0)
    assert A.shape == (0, 9) and b.shape == (0,)


def test_three_bar_tips_off_its_base_with_its_bars_apart(threebar):
    """Before the clearance rows, every tip from the base brought two bars 1 mm apart (the linear program
    squeezed them together while it pushed the centre of mass over the edge: CannotRoll, < the 10 mm margin);
    now the tip goes over an edge with every bar pair at least the margin apart."""
    X = at_rest(threebar)
    step = GaitPlanner(threebar).plan_step(X, np.radians(90.0))
    assert step.face_from == ("p11", "p12", "p13") and len(set(step.face_to) - set(step.face_from)) == 1
    assert step.min_clearance >= 0.01
