#!/bin/bash
# Runs in a fresh verifier container ([verifier] environment_mode = "separate" in task.toml) built from this
# task's environment: it sees the agent's work only through the artifacts task.toml declares, so nothing the agent
# planted (a python3 or tool shim, sitecustomize.py, a .pth, conftest.py, a forged reward file) is there.
# Belt and braces for a shared run: the image's own interpreter by absolute path, isolated (-I: no PYTHON* vars,
# no user site, no cwd on sys.path; -S: no site-packages, so no .pth or sitecustomize), a PATH without
# /usr/local, and the 0 written first, so the verifier never ends without a reward file.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json
echo 0 > /logs/verifier/reward.txt
if /usr/bin/python3 -I -S /tests/test_outputs.py; then
  echo 1 > /logs/verifier/reward.txt
fi
exit 0
