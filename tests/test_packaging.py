"""What the package ships (py.typed, the console script) and how users' rules behave when a
notebook cell that registers one runs again."""
import importlib.metadata
import importlib.resources
import os
import subprocess
import sys
import sysconfig
import warnings
from pathlib import Path

import numpy as np
import pytest

import srcgrad
from srcgrad.rules import registry


@pytest.fixture
def user_rules():
    """Forgets the rules a test registers: the registry's meta-tests walk every rule."""
    before = dict(registry._RULES)
    yield
    for key, rule in list(registry._RULES.items()):
        if key in before:
            registry._RULES[key] = before[key]
        elif not rule.builtin:  # (scipy's built-in rules may have loaded meanwhile)
            del registry._RULES[key]


# --------------------------------------------------------------------------- re-registration

def _softsign(x):
    return x / (1.0 + np.abs(x))


def _loss(x):
    return np.sum(_softsign(x) * 3.0)


def _register_true_vjp():
    @srcgrad.rule(_softsign)
    def softsign_vjp(g, ans, x):
        return (g / (1.0 + np.abs(x)) ** 2,)  # one tuple: generated code inlines it

    return softsign_vjp


def _register_doubled_vjp():
    @srcgrad.rule(_softsign)
    def softsign_vjp(g, ans, x):
        return (2.0 * g / (1.0 + np.abs(x)) ** 2,)

    return softsign_vjp


X = np.array([0.5, -1.5, 2.0])
TRUE_GRAD = 3.0 / (1.0 + np.abs(X)) ** 2


def test_running_the_same_registration_again_replaces_it_silently(user_rules):
    _register_true_vjp()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _register_true_vjp()
    np.testing.assert_allclose(srcgrad.grad(_loss)(X), TRUE_GRAD)


def test_a_different_user_rule_replaces_the_old_one_with_a_warning(user_rules):
    _register_true_vjp()
    with pytest.warns(UserWarning, match="_softsign.* replaced by a different vjp"):
        _register_doubled_vjp()
    np.testing.assert_allclose(srcgrad.grad(_loss)(X), 2.0 * TRUE_GRAD)


def test_a_different_jvp_warns_and_is_used(user_rules):
    def attach(scale):
        vjp = _register_true_vjp()

        @vjp.defjvp
        def softsign_jvp(dx, ans, x):
            return (scale * dx / (1.0 + np.abs(x)) ** 2,)

    attach(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        attach(1.0)
    assert registry.lookup(_softsign).jvp.__name__ == "softsign_jvp"

    vjp = _register_true_vjp()
    with pytest.warns(UserWarning, match="different jvp"):
        @vjp.defjvp
        def other_jvp(dx, ans, x):
            return (0.0 * dx,)


def test_built_in_rules_cannot_be_replaced():
    before = registry.lookup(np.sin)
    with pytest.raises(srcgrad.SrcgradError,
                       match="'numpy.sin' is already registered as one of srcgrad's built-in "
                             "rules, and built-in rules cannot be replaced"):
        @srcgrad.rule(np.sin)
        def sin_vjp(g, ans, x):
            return g
    assert registry.lookup(np.sin) is before and before.builtin


def test_a_replaced_rule_rebuilds_code_that_inlined_the_old_one(user_rules):
    _register_true_vjp()
    gradient = srcgrad.grad(_loss)
    np.testing.assert_allclose(gradient(X), TRUE_GRAD)
    old_source = srcgrad.source(gradient)

    with pytest.warns(UserWarning):
        _register_doubled_vjp()
    # a gradient made before the change, a new one, and the source shown all follow it
    np.testing.assert_allclose(gradient(X), 2.0 * TRUE_GRAD)
    np.testing.assert_allclose(srcgrad.grad(_loss)(X), 2.0 * TRUE_GRAD)
    assert srcgrad.source(srcgrad.grad(_loss)) != old_source
    np.testing.assert_allclose(srcgrad.value_and_grad(_loss)(X)[1], 2.0 * TRUE_GRAD)


def test_a_rule_registered_after_a_build_is_used(user_rules):
    def opaque(x):
        return np.sin(x)

    def f(x):
        return opaque(x) * 2.0

    gradient = srcgrad.grad(f)
    np.testing.assert_allclose(gradient(0.3), 2.0 * np.cos(0.3))

    @srcgrad.rule(opaque)
    def opaque_vjp(g, ans, x):
        return g * 10.0  # (a bare cotangent: generated code calls the rule)

    np.testing.assert_allclose(gradient(0.3), 20.0)


# --------------------------------------------------------------------------- what is shipped

def test_py_typed_is_shipped():
    assert (importlib.resources.files("srcgrad") / "py.typed").is_file()


def test_license_file_is_apache():
    license_file = Path(__file__).resolve().parents[1] / "LICENSE"
    text = license_file.read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text


SHOWN = '''\
import numpy as np


def cube_sum(x):
    return np.sum(x ** 3)
'''


def _run(command, tmp_path, target="model.py:cube_sum"):
    (tmp_path / "model.py").write_text(SHOWN)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(srcgrad.__file__)))
    return subprocess.run([*command, "show", target], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_python_m_srcgrad_show_prints_the_generated_source(tmp_path):
    done = _run([sys.executable, "-m", "srcgrad"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "def cube_sum_bwd" in done.stdout and "# backward sweep" in done.stdout
    assert "# model.py:5  return np.sum(x ** 3)" in done.stdout


def test_python_m_srcgrad_names_a_missing_function(tmp_path):
    done = _run([sys.executable, "-m", "srcgrad"], tmp_path, "model.py:nope")
    assert done.returncode != 0 and "no function 'nope'" in done.stderr + done.stdout
    assert "cube_sum" in done.stderr + done.stdout


def test_installed_console_script_runs_the_same_command(tmp_path):
    try:
        metadata = importlib.metadata.metadata("srcgrad")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("srcgrad is imported from a source tree, not installed")
    scripts = importlib.metadata.entry_points(group="console_scripts", name="srcgrad")
    assert [ep.value for ep in scripts] == ["srcgrad.__main__:main"], \
        "the installed metadata has no srcgrad console script: reinstall (pip install -e .)"
    assert metadata["License-Expression"] == "Apache-2.0"
    script = Path(sysconfig.get_path("scripts")) / "srcgrad"
    assert script.exists(), f"{script} was not installed"
    by_script = _run([str(script)], tmp_path)
    by_module = _run([sys.executable, "-m", "srcgrad"], tmp_path)
    assert by_script.returncode == 0, by_script.stderr
    assert by_script.stdout == by_module.stdout


def test_console_entry_point_returns_an_exit_code(tmp_path, capsys, monkeypatch):
    from srcgrad.__main__ import main

    (tmp_path / "srcgrad_cli_model.py").write_text(SHOWN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        assert main(["show", "srcgrad_cli_model.py:cube_sum"]) == 0
    finally:
        sys.modules.pop("srcgrad_cli_model", None)
    assert "def cube_sum" in capsys.readouterr().out
