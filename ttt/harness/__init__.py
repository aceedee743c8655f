"""The run harness: what ``python -m ttt.train`` wraps around every learner.

``training`` (the loop's shared parts: logging, the schedule of evaluations, checkpoints, Ctrl-C),
``run_dir`` (the guarded run folder, resume), ``multirun`` (a joblib multirun's stop), ``learners`` (what
the harness knows of the learners), ``specs`` (player specs and agent loading), ``clock`` (the CPU time
spent training), ``event_file`` (TensorBoard events) and ``curves`` (reading finished runs back).
"""
