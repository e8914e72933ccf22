"""The construct from its wheels, in a CDK app outside the checkout (issue 39).

Both wheels are built (``python -m build --no-isolation --wheel``: the library,
``layers/dynashard``, and the construct, ``packages/dynashard-cdk``) from copies, and
installed with ``--no-deps --no-index`` into a fresh virtualenv in a temporary folder.
Its third-party packages (aws-cdk-lib, constructs, cdk-nag, boto3, pydantic...) are the
project environment's, reached through a ``.pth`` line naming that environment's
site-packages: a path line adds the folder to ``sys.path`` but runs none of the ``.pth``
files inside it, so the project's editable install of the library is not seen, and the
venv's own site-packages (the two wheels) comes first anyway. No package index is needed.

A one-file app (a stack with a ``dynamodb.Table``, ``Dynashard(self, "Shards",
table=table)`` and a grant) is synthesized by ``python app.py`` in that folder, with no
``PYTHONPATH`` and the checkout nowhere on the path: the functions' code and the layer
must come from the installed packages.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.infra

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "layers" / "dynashard"
CDK_PACKAGE = ROOT / "packages" / "dynashard-cdk"
BUILD_OUTPUT = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", "*.pyc")

APP = '''\
"""A user's CDK app: its own table, dynashard on it, its service role granted."""

from aws_cdk import App, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from dynashard_cdk import Dynashard

S = dynamodb.AttributeType.STRING


class ServiceStack(Stack):
    def __init__(self, scope, construct_id):
        super().__init__(scope, construct_id)
        table = dynamodb.Table(
            self,
            "Events",
            partition_key=dynamodb.Attribute(name="PK", type=S),
            sort_key=dynamodb.Attribute(name="SK", type=S),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        )
        table.add_global_secondary_index(
            index_name="GSI1",
            partition_key=dynamodb.Attribute(name="GSI1PK", type=S),
            sort_key=dynamodb.Attribute(name="GSI1SK", type=S),
        )
        shards = Dynashard(self, "Shards", table=table, with_ingest=True, with_query=True)
        service = iam.Role(
            self, "ServiceRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com")
        )
        shards.grant_write(service)


app = App()
ServiceStack(app, "UserService")
app.synth()
'''

#: What the app's interpreter reports of where the construct found its assets.
PROBE = """\
import json, dynashard, dynashard_cdk
from dynashard_cdk import assets
print(json.dumps({
    "dynashard": dynashard.__file__,
    "dynashard_cdk": dynashard_cdk.__file__,
    "installed": assets.INSTALLED,
    "functions": str(assets.FUNCTIONS_DIR),
    "lock": str(assets.LAYER_LOCK),
    "layer_source": None if assets.LAYER_SOURCE is None else str(assets.LAYER_SOURCE),
}))
"""

#: The installed package's layer bundling, run with an empty lock (no download): the
#: layer's python/ then holds exactly the library it copies from the installed wheel.
BUNDLE = """\
import sys
from pathlib import Path
from dynashard_cdk.constructs import layer

layer.find_layer_python = lambda: None  # no bytecode: compare the sources
work = Path(sys.argv[1])
(work / "empty.lock").write_text("")
staged = layer.stage_installed_library(work / "staged", work / "empty.lock")
assert layer.PipLocalBundling(staged, work / "empty.lock").try_bundle(str(work / "out"), None)
"""


@dataclass
class UserEnv:
    """A virtualenv outside the checkout with the two wheels, and the folder of the app."""

    python: Path
    site_packages: Path
    home: Path
    env: dict[str, str]
    wheels: list[Path]

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.python), *args],
            cwd=self.home,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _explain(result: subprocess.CompletedProcess[str]) -> str:
    return (
        f"{result.args}: exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-4000:]}"
    )


def _build_wheel(source: Path, work: Path) -> Path:
    """Build the wheel of a copy of ``source`` (symbolic links followed) into ``work/dist``."""
    copy = work / source.name
    shutil.copytree(source, copy, ignore=BUILD_OUTPUT)
    out = work / "dist"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--no-isolation",
            "--wheel",
            "--outdir",
            str(out),
            str(copy),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, _explain(result)
    (wheel,) = out.glob(f"{source.name.replace('-', '_')}-*.whl")
    return wheel


@pytest.fixture(scope="module")
def user_env(tmp_path_factory: pytest.TempPathFactory) -> UserEnv:
    work = tmp_path_factory.mktemp("cdk-wheels")
    wheels = [_build_wheel(LIBRARY, work), _build_wheel(CDK_PACKAGE, work)]
    home = tmp_path_factory.mktemp("cdk-user")
    assert not home.resolve().is_relative_to(ROOT), f"{home} is inside the checkout"
    venv_dir = home / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
    python = venv_dir / "bin" / "python"
    site_packages = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # the project environment's third-party packages, after the venv's own
    shared = sysconfig.get_paths()["purelib"]
    (site_packages / "project-environment.pth").write_text(shared + "\n")
    dropped = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "CDK_OUTDIR")
    env = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("AWS_")}
    env.update(
        VIRTUAL_ENV=str(venv_dir),
        PATH=f"{venv_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        PYTHONNOUSERSITE="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION="1",
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
    )
    user = UserEnv(python, site_packages, home, env, wheels)
    result = user.run(
        "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", *map(str, wheels)
    )
    assert result.returncode == 0, _explain(result)
    return user


@pytest.fixture(scope="module")
def synthesized(user_env: UserEnv) -> dict[str, Any]:
    """Run the one-file app with ``python app.py``; return its template and assets."""
    (user_env.home / "app.py").write_text(APP)
    outdir = user_env.home / "cdk.out"
    env = {
        **user_env.env,
        "CDK_OUTDIR": str(outdir),
        # no pip run for the layer here (its bundling is tested below, offline)
        "CDK_CONTEXT_JSON": json.dumps({"aws:cdk:bundling-stacks": []}),
    }
    result = subprocess.run(
        [str(user_env.python), "app.py"],
        cwd=user_env.home,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, _explain(result)
    return {
        "template": json.loads((outdir / "UserService.template.json").read_text()),
        "assets": json.loads((outdir / "UserService.assets.json").read_text()),
        "outdir": outdir,
    }


def test_the_two_wheels_install_outside_the_checkout(user_env: UserEnv) -> None:
    # Given the venv with the two wheels
    names = sorted(wheel.name for wheel in user_env.wheels)
    assert names[0].startswith("dynashard-") and names[1].startswith("dynashard_cdk-")
    # When the app's interpreter reports where the construct finds its assets
    result = user_env.run("-c", PROBE)
    assert result.returncode == 0, _explain(result)
    where = json.loads(result.stdout)
    # Then the library, the construct, the functions' code and the lock are the
    # installed packages', and the layer's library is the installed one (no source)
    for name in ("dynashard", "dynashard_cdk", "functions", "lock"):
        path = Path(where[name]).resolve()
        assert path.is_relative_to(user_env.site_packages.resolve()), (name, path)
        assert not path.is_relative_to(ROOT), (name, path)
    assert where["installed"] is True and where["layer_source"] is None


def test_a_one_file_app_synthesizes_the_functions_and_the_layer(
    user_env: UserEnv, synthesized: dict[str, Any]
) -> None:
    resources = synthesized["template"]["Resources"]
    by_type: dict[str, list[dict[str, Any]]] = {}
    for resource in resources.values():
        by_type.setdefault(resource["Type"], []).append(resource)
    # The five functions (three ingest, query, scaler) on the one layer
    handlers = sorted(fn["Properties"]["Handler"] for fn in by_type["AWS::Lambda::Function"])
    assert handlers == [
        "app.api_handler",
        "app.handler",
        "app.handler",
        "app.kinesis_handler",
        "app.sqs_handler",
    ]
    assert len(by_type["AWS::Lambda::LayerVersion"]) == 1
    # and the user's role with the writer's grant on the table
    statements = [
        statement
        for policy in by_type["AWS::IAM::Policy"]
        if any("ServiceRole" in json.dumps(role) for role in policy["Properties"]["Roles"])
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    granted = {
        a
        for s in statements
        for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    }
    assert {"dynamodb:BatchWriteItem", "dynamodb:DescribeTable", "dynamodb:UpdateItem"} <= granted


def test_the_functions_code_assets_are_the_installed_packages_files(
    user_env: UserEnv, synthesized: dict[str, Any]
) -> None:
    # Given the staged assets of the synthesized app
    outdir: Path = synthesized["outdir"]
    staged = {path.parent.name: path.parent for path in outdir.glob("asset.*/app.py")}
    installed = user_env.site_packages / "dynashard_cdk" / "functions"
    # Then each function's code asset is its installed folder, file for file
    expected = {
        name: {p.name: p.read_bytes() for p in (installed / name).glob("*.py")}
        for name in ("ingest", "query", "scaler")
    }
    found = [{p.name: p.read_bytes() for p in folder.glob("*.py")} for folder in staged.values()]
    for name, files in expected.items():
        assert files in found, f"no asset holds the installed functions/{name}"
    # and the layer's asset is the staged installed library, not the checkout's source
    # (bundling is skipped here: the manifest names the staging folder it hashed)
    (layer,) = [
        r
        for r in synthesized["template"]["Resources"].values()
        if r["Type"] == "AWS::Lambda::LayerVersion"
    ]
    key = layer["Properties"]["Content"]["S3Key"]
    (asset,) = [a for h, a in synthesized["assets"]["files"].items() if key == f"{h}.zip"]
    source = Path(asset["source"]["path"])
    assert source.name.startswith("dynashard-layer-source-")
    assert not source.resolve().is_relative_to(ROOT)


def test_the_installed_layer_bundling_ships_the_installed_library(
    user_env: UserEnv, tmp_path: Path
) -> None:
    # When the installed package bundles the layer (no dependencies: an empty lock)
    result = user_env.run("-c", BUNDLE, str(tmp_path))
    assert result.returncode == 0, _explain(result)
    site = tmp_path / "out" / "python"
    # Then its python/ is the installed library, file for file, with its metadata
    installed = user_env.site_packages / "dynashard"
    shipped = {
        str(p.relative_to(site / "dynashard")): p.read_bytes()
        for p in (site / "dynashard").rglob("*")
        if p.is_file()
    }
    wheel = {
        str(p.relative_to(installed)): p.read_bytes()
        for p in installed.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert shipped == wheel and "names.py" in shipped
    (info,) = site.glob("dynashard-*.dist-info")
    assert (info / "METADATA").read_text().startswith("Metadata-Version")
    assert not (info / "RECORD").exists()  # nothing of this machine's install
