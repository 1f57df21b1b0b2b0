"""loopback.py: a loopback escher cluster for the benchmark scripts: a head and N-1 nodes
of one CPU each, in session directories under a root, optionally pinned to CPU cores
(`taskset`; the daemons, their workers and the jobs they start inherit the pinning)."""
import os
import subprocess


def start_cluster(esc, root, nodes, cpus="1", cores=None):
    """Starts the cluster; returns the environment that addresses it (ESCHER_SESSION_DIR
    of the head). cores: a taskset CPU list ("0", "0-1") or None."""
    env = dict(os.environ, ESCHER_SESSION_DIR=os.path.join(root, "head"))
    for k in ("ESCHER_ADDRESS", "ESCHER_TOKEN", "ESCHER_NODE_ID"):
        env.pop(k, None)
    pin = ["taskset", "-c", cores] if cores is not None else []
    subprocess.run(pin + [esc, "start", "--head", "--port", "0", "--bind", "127.0.0.1",
                          "--num-cpus", cpus, "--num-gpus", "0"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    head = os.path.join(root, "head")
    gcs = open(os.path.join(head, "gcs_address")).read().strip()
    token = open(os.path.join(head, "token")).read().strip()
    key = open(os.path.join(head, "daemon_key")).read().strip()
    for i in range(1, nodes):
        d = os.path.join(root, "n%d" % i)
        subprocess.run(pin + [esc, "start", "--address", gcs, "--token", token, "--daemon-key",
                              key, "--bind", "127.0.0.1", "--session-dir", d, "--num-cpus",
                              cpus, "--num-gpus", "0"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
    return env


def stop_cluster(esc, root, env):
    for d in sorted(os.listdir(root)):
        if d.startswith("n"):
            subprocess.run([esc, "stop", "--force"],
                           env=dict(env, ESCHER_SESSION_DIR=os.path.join(root, d)),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run([esc, "stop", "--force"], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
