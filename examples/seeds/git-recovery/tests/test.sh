#!/bin/bash
# Reward 1 only if every check in test_outputs.py passes. The tests run in a fresh verifier container
# ([verifier] environment_mode = "separate" in task.toml) that sees the agent's work only through the declared
# artifacts, so nothing the agent planted (a python3 or tool shim, sitecustomize.py, a .pth, a forged reward
# file) is there. Belt and braces for a shared run: the image's own interpreter by absolute path, isolated (-I:
# no PYTHON* vars, user site or cwd; -S: no site-packages), and a PATH without /usr/local.
# The reward is written once, last, after every check has ended: whatever of the agent's the checks ran (a build,
# as nobody) cannot write /logs/verifier, which belongs to root, and anything it wrote before is removed here.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
# Harbor's own environments open /logs/verifier to every user (777); close it to the agent's code first.
mkdir -p /logs/verifier && chmod 755 /logs/verifier 2>/dev/null
reward=0
if /usr/bin/python3 -I -S /tests/test_outputs.py; then
  reward=1
fi
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json /logs/verifier/reward.txt
echo "$reward" > /logs/verifier/reward.txt
exit 0
