from trainer.memory import STATE_BYTES_PER_PARAM, estimate, main
from trainer.model import GPTConfig, param_count


def test_estimate_by_hand():
    cfg = GPTConfig(
        vocab_size=100,
        seq_len=8,
        num_layers=2,
        num_heads=2,
        hidden_dim=16,
        dtype_policy="mixed_bfloat16",
    )
    est = estimate(cfg)
    block = 34 * 8 * 16 + 7 * 2 * 8 * 8
    assert est.activation_bytes == 2 * block + 10 * 8 * 100
    assert est.state_bytes == 18 * param_count(cfg) == STATE_BYTES_PER_PARAM * est.params


def test_recompute_keeps_block_inputs_and_one_block():
    cfg = GPTConfig(
        vocab_size=100,
        seq_len=8,
        num_layers=4,
        num_heads=2,
        hidden_dim=16,
        dtype_policy="mixed_bfloat16",
        recompute=True,
    )
    block = 34 * 8 * 16 + 7 * 2 * 8 * 8
    assert estimate(cfg).activation_bytes == 4 * 2 * 8 * 16 + block + 10 * 8 * 100


def test_float32_doubles_activations():
    bf16 = GPTConfig(
        vocab_size=100,
        seq_len=8,
        num_layers=1,
        num_heads=1,
        hidden_dim=8,
        dtype_policy="mixed_bfloat16",
    )
    fp32 = GPTConfig(vocab_size=100, seq_len=8, num_layers=1, num_heads=1, hidden_dim=8)
    assert estimate(fp32).activation_bytes == 2 * estimate(bf16).activation_bytes


def test_6_7b_state_does_not_fit_80gb_but_1_3b_does():
    big = estimate(
        GPTConfig.from_preset("6.7b", vocab_size=32768, seq_len=2048, dtype_policy="mixed_bfloat16")
    )
    small = estimate(
        GPTConfig.from_preset("1.3b", vocab_size=32768, seq_len=2048, dtype_policy="mixed_bfloat16")
    )
    assert big.max_sequences(80e9) == 0 and small.max_sequences(80e9) >= 1


def test_table_lists_every_preset(capsys):
    assert main(["--presets", "tiny,125m"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4 and lines[2].startswith("| tiny |")
