"""Apache Beam's flags: which ones exist (to refuse typos) and what they say (the runner).

Beam itself only warns "Discarding unparseable args" and runs on with its defaults, so a
mistyped ``--seq_length`` would cost a whole cluster run. Every flag that neither pilepack nor
one of Beam's ``PipelineOptions`` classes defines is refused before anything runs.
"""

from __future__ import annotations

import argparse

from common.flags import flag_names

# Class names, as ``runner_name`` gives them.
DIRECT_RUNNERS = ("DirectRunner", "BundleBasedDirectRunner", "SwitchingDirectRunner")


def _options_classes() -> list[type]:
    from apache_beam.options import pipeline_options

    found, todo = [], list(pipeline_options.PipelineOptions.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls not in found:
            found.append(cls)
            todo.extend(cls.__subclasses__())
    return found


def beam_parser() -> argparse.ArgumentParser:
    """An argparse parser holding every flag of every Beam ``PipelineOptions`` class."""
    parser = argparse.ArgumentParser(allow_abbrev=False, add_help=False, exit_on_error=False)
    seen: set[str] = set()
    for cls in _options_classes():
        probe = argparse.ArgumentParser(allow_abbrev=False, add_help=False,
                                        conflict_handler="resolve")
        try:
            cls._add_argparse_args(probe)  # Beam's own registration hook
        except (argparse.ArgumentError, TypeError):
            continue
        for action in probe._actions:
            names = [name for name in action.option_strings if name not in seen]
            if names:
                seen.update(names)
                parser._add_action(action)
    return parser


def unknown_beam_args(beam_args: list[str]) -> list[str]:
    """The arguments of ``beam_args`` that no Beam options class knows.

    Raises:
      argparse.ArgumentError: a Beam flag with a bad value (e.g. ``--direct_num_workers=abc``).
    """
    _, unknown = beam_parser().parse_known_args(beam_args)
    return unknown


def refuse_unknown_args(parser, beam_args: list[str]) -> None:
    """Exit 2 through ``parser`` (one usage, one line) for an unknown or malformed Beam flag."""
    beam = beam_parser()  # built once: it walks every Beam options class
    try:
        _, unknown = beam.parse_known_args(beam_args)
    except argparse.ArgumentError as err:
        parser.error(f"Apache Beam flag {err}")
    parser.refuse_unknown(unknown, also_known=flag_names(beam))


def runner_name(beam_args: list[str]) -> str:
    """The class name of the ``--runner`` Beam will use (default: DirectRunner), resolved as
    Beam resolves it: ``directrunner``, ``Direct`` and ``direct`` are all ``DirectRunner``."""
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

    runner = PipelineOptions(beam_args).view_as(StandardOptions).runner
    if runner is None:
        return "DirectRunner"
    if not isinstance(runner, str):
        return type(runner).__name__
    return resolve_runner(runner).rsplit(".", 1)[-1]


def resolve_runner(name: str) -> str:
    """Beam's qualified path for a runner name, by ``apache_beam.runners.runner.create_runner``'s
    rule: the known runners' class names matched without case, with or without the ``Runner``
    suffix; any other name (a module path) as given.

    >>> resolve_runner("direct")
    'apache_beam.runners.direct.direct_runner.DirectRunner'
    """
    from apache_beam.options.pipeline_options import StandardOptions

    known = {path.rsplit(".", 1)[-1].lower(): path for path in StandardOptions.ALL_KNOWN_RUNNERS}
    return known.get(name.lower(), known.get(name.lower() + "runner", name))


def is_direct_runner(beam_args: list[str]) -> bool:
    return runner_name(beam_args) in DIRECT_RUNNERS


def direct_running_mode(beam_args: list[str]) -> str:
    from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions

    return PipelineOptions(beam_args).view_as(DirectOptions).direct_running_mode or "in_memory"


def fanout_enabled(mode: str, beam_args: list[str]) -> bool:
    """``--fanout``: auto is on unless the runner is the in-memory DirectRunner (one process,
    which would materialize the whole input at the shuffle; it has its encoder pool)."""
    if mode != "auto":
        return mode == "on"
    return not (is_direct_runner(beam_args) and direct_running_mode(beam_args) == "in_memory")


def runs_in_one_process(beam_args: list[str]) -> bool:
    """The in-memory DirectRunner: one Beam worker for the whole machine, so the encoder may
    use every core (a pool); other runners already run a worker per core."""
    return is_direct_runner(beam_args) and direct_running_mode(beam_args) == "in_memory"
