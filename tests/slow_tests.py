"""Which tests are ``slow``: the one list of the test tiers (conftest.py applies it).

``python -m pytest -m "not slow"`` is the tier a developer runs on every change (about a
minute on two cores); ``python -m pytest`` (CI, ``.ci/run``) runs both tiers. A test is
slow when it pays for child processes or whole end-to-end runs: the debug agent under a
controller, the TUI driven by the Pilot, a CLI verb in a subprocess, a fault injected into
a real process, a compiler run in a second process, the docs or examples executed whole.
Every package keeps its unit-level tests in the fast tier, so a module that mixes both
kinds lists its slow tests one by one rather than being marked whole.

Measured with ``--durations=0`` (issue 18, step 7); a new test of a listed module is slow
by default, a new module is fast until it is listed here.
"""

from __future__ import annotations

import os

import pytest

# Paths relative to tests/: every test of these modules is slow.
SLOW_MODULES = {
    # CLI verbs run as subprocesses (tests/cli/test_cli_doc.py stays fast).
    "cli/test_exit_codes.py",
    "cli/test_one_runner.py",
    "cli/test_passthrough.py",
    "cli/test_report_output.py",
    "cli/test_session_status.py",  # how scripts end: finished, raised, breakpoint, signals
    "cli/test_sessions.py",
    # The bit-level matmul tests again in a child pytest, OpenBLAS's core type flipped.
    "codegen/test_other_openblas_core.py",
    # Fresh processes reading the thread variables (OpenBLAS reads its own when it loads).
    "codegen/test_thread_environment.py",
    # Two ranks under execmode launch (mpiexec): one launch runs every check (~1 s).
    "distributed/test_ranks.py",
    # The debug agent in a child process under a Controller.
    "debug/test_controller.py",   # its restart loop starts 20 agents (~20 s on a quiet box)
    "debug/test_crashes.py",
    "debug/test_graph_debugging.py",
    "debug/test_graph_stepping.py",
    "debug/test_nonfinite.py",
    "debug/test_python_state.py",
    "debug/test_session_end_agent.py",
    "debug/test_stepping.py",
    "debug/test_terminal.py",
    # The getting-started page and the README run whole.
    "docs/test_getting_started.py",
    "docs/test_readme.py",
    # Every example script, in quick mode, each in its own interpreter.
    "examples/test_examples.py",
    # Faults injected into real processes (test_hostile_conditions.py keeps its parser
    # corpus in the fast tier; its two runs of execmode are listed below).
    "faults/test_cache_trust.py",
    "faults/test_deep_recursion.py",
    "faults/test_disk_full.py",
    "faults/test_no_orphans.py",
    "faults/test_script_processes.py",
    "faults/test_session_faults.py",
    # The profiler's CLI and live sessions across processes.
    "profilers/test_cli.py",
    "profilers/test_live_sessions.py",
    "profilers/test_output_volume.py",
    # The TUI driven by the Pilot (against a live agent or a recorded session), and its
    # snapshots. The TUI's pure modules have their fast tests (test_ir_diff.py, test_cli.py).
    "tui/test_breakpoint_editing.py",
    "tui/test_breakpoints.py",
    "tui/test_focus_and_output.py",
    "tui/test_graph_mode.py",
    "tui/test_graph_stepping.py",
    "tui/test_import_views.py",
    "tui/test_kernel_inputs.py",
    "tui/test_key_hints.py",
    "tui/test_layout.py",
    "tui/test_lifecycle.py",
    "tui/test_monkey.py",
    "tui/test_narrow_screen.py",
    "tui/test_op_history.py",
    "tui/test_past_values.py",
    "tui/test_profile_measure.py",
    "tui/test_prompt_pause.py",
    "tui/test_python_state.py",
    "tui/test_restart_safety.py",
    "tui/test_scale.py",
    "tui/test_sharing.py",
    "tui/test_snapshots.py",
    "tui/test_stdin_line.py",
    "tui/test_stepping.py",
    "tui/test_tensor_small.py",
    "tui/test_text_is_data.py",
    "tui/test_views.py",
    # import execmode and its front ends, each in a fresh interpreter (~5 s in all); the
    # import-hygiene cases of test_import_layers.py stay fast.
    "test_lazy_package.py",
}

# "module::test function" (all its parameters): slow tests inside otherwise fast modules.
SLOW_TESTS = {
    "codegen/test_cache_and_fallback.py::test_second_process_hits_the_disk_cache",
    "codegen/test_cache_and_fallback.py::test_two_processes_compiling_at_once",
    "codegen/test_cuda.py::test_cuda_source_compiles_with_nvcc",
    "codegen/test_eager_operators.py::test_without_a_compiler_the_python_operators_do_the_work",
    "codegen/test_fast_entry.py::test_a_second_process_finds_the_extension_in_the_disk_cache",
    # Fresh processes: EXECMODE_NUM_THREADS end to end, and a fork after threads ran.
    "codegen/test_threads.py::test_jitted_results_are_the_same_bytes_at_1_2_and_4_threads",
    "codegen/test_threads.py::test_an_invalid_thread_count_stops_the_first_compiled_kernel",
    "codegen/test_threads.py::test_fork_after_threaded_kernels_does_not_hang",
    "codegen/test_vectorised.py::test_long_chains_are_vectorised",  # compiles long chains
    # The agent under a Controller, or execmode run (the carried-breakpoint checks stay).
    "debug/test_breakpoint_reach.py::test_breakpoints_that_never_hit_come_back_with_their_reason",
    "debug/test_breakpoint_reach.py::test_a_breakpoint_on_a_line_that_ran_no_op_yet_is_pending",
    "debug/test_breakpoint_reach.py::test_ignore_counts_and_conditions_are_edited_in_place",
    "debug/test_breakpoint_reach.py::test_restart_carries_ids_enabled_state_and_ignore_counts",
    "debug/test_breakpoint_reach.py::test_execmode_run_lists_the_breakpoints_that_never_hit",
    # import in a fresh interpreter: the distributed names load no mpi4py.
    "distributed/test_single_process.py::"
    "test_importing_the_distributed_names_does_not_import_mpi4py",
    # Both build the site with mkdocs (~4 s); the README's links to it stay fast.
    "docs/test_api_reference.py::test_every_page_of_docs_is_in_the_site",
    "docs/test_api_reference.py::test_the_reference_documents_the_public_api",
    "faults/test_hostile_conditions.py::test_a_condition_that_fails_while_evaluating_disables_its_breakpoint",
    "faults/test_hostile_conditions.py::test_the_run_command_refuses_a_bad_condition_before_any_op",
    # 400 random programs, eager against jit (~20 s); the fuzzer's own unit tests stay fast,
    # and tests/graph/test_differential.py keeps random programs in the fast tier.
    "fuzz/test_fuzz.py::test_fast_tier",
    # LBFGS under em.jit: a graph break at every decision, a compile per segment (~8 s
    # cold); its PyTorch twin stays fast.
    "engine/test_optim.py::test_lbfgs_under_jit_breaks_its_graph_and_gives_eagers_numbers",
    # `execmode explain` as a subprocess; em.explain's own tests stay fast.
    "graph/test_breaks.py::test_explain_command_reports_breaks_and_retraces",
    "graph/test_explain.py::test_the_command_bakes_like_the_api",
    "graph/test_explain.py::test_an_unknown_on_break_is_a_usage_error",
    "profilers/test_pyspy.py::test_real_samples_are_folded_into_the_session",
    "profilers/test_pyspy.py::test_refused_py_spy_leaves_the_run_going",
    "tui/test_navigation.py::test_views_open_by_number_palette_and_mouse",
    "tui/test_post_mortem.py::test_a_recorded_session_opens_post_mortem",
    "tui/test_post_mortem.py::test_execmode_open_reads_the_row_index_before_the_app_starts",
    # Fresh interpreters: what importing the PyTorch front end loads, and what Python
    # prints for a missing name (its "Did you mean"); the in-process checks stay fast.
    "torch_front/test_namespace.py::test_importing_the_front_end_loads_nothing_until_a_name_is_used",
    "torch_front/test_missing_names.py::test_reported_misleading_suggestions_are_gone",
}

_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))


def slow_key(path: str, function: str) -> tuple[str, str]:
    """(module relative to tests/ with / separators, "module::function")."""
    module = os.path.relpath(path, _TESTS_DIR).replace(os.sep, "/")
    return module, f"{module}::{function}"


def mark_slow_tests(items) -> None:
    for item in items:
        function = getattr(item, "originalname", None) or item.name.split("[")[0]
        module, test = slow_key(str(item.path), function)
        if module in SLOW_MODULES or test in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
