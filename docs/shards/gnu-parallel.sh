#!/bin/sh
# Grade a class in 4 shares with GNU parallel, on one machine or several (add
# --sshlogin host1,host2 and a class folder they all see), then merge the shares.
# Each share names itself: --shard K/4, so no variable is needed.
set -eu
shares=4
seq "$shares" | parallel --jobs "$shares" --halt now,fail=1 \
    grader batch class/ --out out/shard-{} --shard {}/"$shares" --jobs 1 --no-progress
grader merge out/shard-* --out out/all
