"""Sharding from the launcher's environment (torchrun's RANK/WORLD_SIZE/LOCAL_RANK, read by the C++
side when input.shard is empty) and from input.shard, and devices: auto under LOCAL_RANK without a
GPU (the host backend). Each case runs in a fresh process with the environment set."""
import json
import os
import subprocess
import sys
import textwrap

from conftest import SAMPLES, sample_images

SCRIPT = textwrap.dedent("""
    import json, sys
    import imgpipe
    over = json.loads(sys.argv[2])
    p = imgpipe.Pipeline(None, inputs=[sys.argv[1]], batch={"size": 4},
                         transform={"resize": {"width": 8, "height": 8}}, **over)
    paths = [s.path for b in p for s in b.samples]
    r = p.report()
    print(json.dumps({"paths": paths, "shard": r["shard"], "backend": r["backend"]}))
""")
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                 "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS",
                 "SLURM_LOCALID", "PMI_RANK", "PMI_SIZE")


def run(env_vars, **over):
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    env.update(env_vars)
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(SAMPLES), json.dumps(over)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_torchrun_environment_shards_the_inputs():
    n = len(sample_images())
    ranks = [run({"RANK": str(r), "WORLD_SIZE": "3", "LOCAL_RANK": str(r)}) for r in range(3)]
    for r, got in enumerate(ranks):
        assert got["shard"] == {"rank": r, "world_size": 3, "origin": "RANK/WORLD_SIZE", "remainder": "uneven",
                                "padded": 0, "dropped": 0}
        # Items i with i % world_size == rank, in order.
        assert got["paths"] == [str(p) for p in sample_images()[r::3]]
        assert got["backend"] == "host"  # devices: auto, LOCAL_RANK set, no GPU here
    every = [p for got in ranks for p in got["paths"]]
    assert len(every) == n and len(set(every)) == n  # every sample once, across the ranks


def test_no_launcher_means_the_whole_input():
    got = run({}, device="cpu")
    assert got["shard"]["world_size"] == 1 and got["paths"] == [str(p) for p in sample_images()]


def test_input_shard_in_the_config_wins_over_the_environment():
    got = run({"RANK": "0", "WORLD_SIZE": "2"}, device="cpu", input={"shard": {"rank": 1, "world_size": 4}})
    assert got["shard"]["rank"] == 1 and got["shard"]["world_size"] == 4 and got["shard"]["origin"] == "config"
    assert got["paths"] == [str(p) for p in sample_images()[1::4]]
