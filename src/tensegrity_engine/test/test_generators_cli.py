"""``tensegrity new`` for every template: the written file loads, is an all-taut equilibrium (residual
<= 1e-9 N, the bound the command enforces) and says so in its header; bad arguments fail with exit 2."""
import pytest

from tensegrity_engine.cli import main
from tensegrity_engine.statics.balance import static_forces
from tensegrity_engine.generators.document import _scaled_self_stress
from tensegrity_engine.model.load import load_model


@pytest.mark.parametrize("args", [["prism", "--n", "4"], ["icosahedron"],
                                  ["tower", "--stages", "3", "--n", "4", "--joints", "class2"],
                                  ["tower", "--stages", "2", "--n", "5"],
                                  ["shell", "--n", "4", "--m", "2", "--joints", "class2"],
                                  ["shell", "--n", "3", "--m", "1", "--primal"]])
def test_new_writes_verified_templates(tmp_path, args, capsys):
    out = tmp_path / "t.yaml"
    assert main(["new", *args, "--min-tension", "5", "-o", str(out)]) == 0
    assert "stable" in capsys.readouterr().out and "stable" in out.read_text().splitlines()[0]
    m = load_model(out)
    _, t = static_forces(m, m.positions)                   # string tensions from the file's rest lengths
    _, residual = _scaled_self_stress(m, t, t.min())      # best bar forces for them
    # rest lengths round-trip through the YAML text (~1e-12 m relative), so 1e-6 N is the file's bound
    assert residual < 1e-6 and t.min() > 5.0 - 1e-6


def test_new_rejects_bad_templates(tmp_path):
    assert main(["new", "tower", "--stages", "0", "-o", str(tmp_path / "a.yaml")]) == 2
    assert main(["new", "shell", "--n", "2", "--m", "1", "-o", str(tmp_path / "b.yaml")]) == 2
    assert not list(tmp_path.iterdir())
