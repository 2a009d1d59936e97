#!/bin/sh
# Grade a class in 8 shares on Slurm: one array task per share. `--shard auto` reads
# SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_STEP and SLURM_ARRAY_TASK_COUNT,
# so --array=1-8 and --array=0-7 both work. Submit it, then merge once every task is done:
#
#   jobid=$(sbatch --parsable slurm-array.sh)
#   sbatch --dependency=afterok:$jobid --wrap 'grader merge out/shard-* --out out/all'
#
# A task requeued (a node lost, a pre-emption) runs again and resumes its share: every
# learner already graded is kept. Its log is appended to, not replaced.
#SBATCH --job-name=grade-class
#SBATCH --array=1-8
#SBATCH --cpus-per-task=2
#SBATCH --mem=4G
#SBATCH --time=01:00:00
#SBATCH --output=grade-%A_%a.log
#SBATCH --open-mode=append
#SBATCH --requeue
set -eu
# exec: the grader replaces the shell, so a signal to the step reaches it.
exec grader batch class/ --out "out/shard-$SLURM_ARRAY_TASK_ID" --shard auto \
    --jobs "${SLURM_CPUS_PER_TASK:-2}" --no-progress
