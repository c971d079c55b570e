"""The data-quality plan: what the quality options ask for, decided once from the config.

``plan_quality`` turns ``PipelineConfig.quality`` into a ``QualityPlan``: which pre-pass stages
run (exact dedup, near dedup, ``--exclude_docs_from``, ``--decontaminate``, token budgets),
with their options, the sources and evaluation files resolved (each looked up once, here, in
the launcher: a wrong path fails before any work), the mixture and the shuffle. The pre-pass
(``pipeline.quality.prepare``, ``pipeline.quality.prepass``), the dry run
(``pipeline.launch.dry_run``) and the manifest (``pipeline.dataset.quality_sections``) take the
plan and read its answers; none of them reads the quality flags again.

A plain frozen dataclass of values: it pickles, so Beam workers get it with the transforms
that hold it, and it depends on nothing in the launching process.
"""

from __future__ import annotations

import dataclasses

from pipeline.config import PipelineConfig, mixture_weights
from pipeline.quality import eval_sets
from pipeline.quality.decontaminate import DecontaminateOptions
from pipeline.quality.eval_join import files_bytes, shard_count
from pipeline.quality.exclusion import ExclusionSources
from pipeline.quality.exclusion import resolve as resolve_exclusion
from pipeline.quality.near_dup import NearDupOptions
from pipeline.quality.shards import shard_counts
from pipeline.read.inputs import InputFile
from schemas.block_shuffle import DEFAULT_SPEC, BlockShuffleSpec

TOKENS = "tokens"  # the mixture's source with --subset_tokens
WEIGHTS = "weights"  # with a JSON object of --subset_weights


@dataclasses.dataclass(frozen=True)
class QualityPlan:
    """What the data-quality options ask for (the defaults: nothing)."""

    exact_dedup: bool = False  # --dedup=exact or near: the first of equal documents is kept
    near: NearDupOptions | None = None  # --dedup=near: then the survivors' near-duplicates
    # (its band and signature shard counts follow the input size: pipeline.quality.shards)
    exclude_docs_from: tuple[str, ...] = ()  # the sources as given (the manifest's)
    exclusion: ExclusionSources = dataclasses.field(
        default_factory=ExclusionSources)  # --exclude_docs_from, resolved
    decontaminate: DecontaminateOptions | None = None  # the evaluation files, resolved
    weights: dict = dataclasses.field(default_factory=dict)  # --subset_weights: epochs
    budgets: dict = dataclasses.field(default_factory=dict)  # --subset_tokens: tokens
    mixture: str = ""  # the manifest's mixture.source: "", "pile-v1", "weights" or "tokens"
    shuffle: bool = False  # --shuffle=global
    shuffle_spec: BlockShuffleSpec = DEFAULT_SPEC  # its blocks and windows
    seed: int = 0  # of the mixture's draws and of the shuffle

    def __post_init__(self):
        if self.near is not None and not self.exact_dedup:
            raise ValueError("near dedup runs on exact dedup's survivors: set exact_dedup")

    @property
    def dedup(self) -> str:
        """``--dedup`` as the manifest records it: off, exact or near."""
        return "near" if self.near is not None else "exact" if self.exact_dedup else "off"

    @property
    def excludes(self) -> bool:
        """Whether ``--exclude_docs_from`` resolved to any hash file or raw file."""
        return bool(self.exclusion)

    @property
    def groups_by_hash(self) -> bool:
        """Whether documents meet by hash in the pre-pass: exact dedup or exclusion (the
        evaluation scan and the token counts need no hash)."""
        return self.exact_dedup or self.excludes

    @property
    def decides(self) -> bool:
        """Whether the pre-pass writes decision files for the main pipeline's Parse."""
        return self.groups_by_hash or self.decontaminate is not None

    @property
    def counts_tokens(self) -> bool:
        """Whether the pre-pass counts the kept documents' tokens (``--subset_tokens``)."""
        return bool(self.budgets)

    @property
    def prepass_runs(self) -> bool:
        """Whether the run starts with the quality pre-pass (``pipeline.quality.prepass``):
        when it has drops to decide or tokens to count. ``--subset_weights`` alone needs none
        (each document's repeats follow from its subset, the seed and its position)."""
        return self.decides or self.counts_tokens

    @property
    def redacts(self) -> bool:
        """``--decontaminate_mode=redact``: the main pipeline cuts the marked spans."""
        return self.decontaminate is not None and self.decontaminate.mode == "redact"

    @property
    def active(self) -> bool:
        """Whether any data-quality option is given (else the run has no quality sections)."""
        return (self.exact_dedup or bool(self.exclude_docs_from) or self.decontaminate is not None
                or bool(self.mixture) or self.counts_tokens or self.shuffle)


def _mixture_source(*, weights: str, budgets: dict) -> str:
    if budgets:
        return TOKENS
    if not weights:
        return ""
    return mixture_weights.PILE_V1_NAME if weights == mixture_weights.PILE_V1_NAME else WEIGHTS


def plan_quality(config: PipelineConfig, *, inputs: list[InputFile]) -> QualityPlan:
    """The plan of ``config``'s quality options over ``inputs``: the ``--decontaminate``
    evaluation files and the ``--exclude_docs_from`` sources looked up and checked (no data is
    read).

    Raises:
      ConfigError, InputError: as ``pipeline.quality.eval_sets.resolve`` and
        ``pipeline.quality.exclusion.resolve`` (a source that is this run's input or output,
        or matches no file; an evaluation set named twice).
    """
    options = config.quality
    decontaminate = None
    if options.decontaminate:
        files = eval_sets.resolve(options.decontaminate, field=options.decontaminate_field,
                                  inputs=inputs)
        decontaminate = DecontaminateOptions(
            files=files, names=options.decontaminate, n=options.decontaminate_ngram,
            mode=options.decontaminate_mode, field=options.decontaminate_field,
            shards=shard_count(files_bytes(files)))
    sources = resolve_exclusion(options.exclude_docs_from, inputs=inputs, output=config.output)
    budgets = mixture_weights.parse_budgets(options.subset_tokens)
    near = None
    if options.dedup == "near":
        near = NearDupOptions.from_config(options)
        band_shards, signature_shards = shard_counts(
            input_bytes=sum(f.bytes for f in inputs), bands=near.bands)
        near = dataclasses.replace(near, band_shards=band_shards,
                                   signature_shards=signature_shards)
    return QualityPlan(
        exact_dedup=options.dedup != "off",
        near=near,
        exclude_docs_from=options.exclude_docs_from, exclusion=sources,
        decontaminate=decontaminate,
        weights=mixture_weights.parse_weights(options.subset_weights), budgets=budgets,
        mixture=_mixture_source(weights=options.subset_weights, budgets=budgets),
        shuffle=options.shuffle == "global", seed=config.training.seed,
        shuffle_spec=BlockShuffleSpec(block_records=options.shuffle_block_records,
                                      window_blocks=options.shuffle_window_blocks))
