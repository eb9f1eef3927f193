"""Organism training data: seeded disjoint splits, degradations, pairs with known gold, planted labels."""

import pytest

from interp.config import validate_config
from interp.data import PACKAGED_SETS, Item, builtin_items, dev_items, heldout_items, load_items, referenced_items
from interp.errors import InterpError
from interp.organisms.config import OrganismConfig, SplitConfig
from interp.organisms.data import (
    DataMix,
    Planting,
    Response,
    TrainPair,
    build_pairs,
    degrade,
    is_flipped,
    pair_label,
    shuffle,
    split_of,
    split_pool,
    splits_of,
    swap_fact,
    truncate,
)
from interp.organisms.evaluate import UNSEEN_FILE, split_file
from tests.helpers import REPO

OWN, OTHER = "own-model", "other-model"


def test_splits_are_disjoint_seeded_and_per_item():
    items = builtin_items()
    splits = split_pool(items, 0, (0.4, 0.2, 0.4))
    ids = [{i.id for i in splits[name]} for name in ("train", "selection", "test")]
    assert sum(len(s) for s in ids) == len(items) and not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    assert split_pool(items, 0, (0.4, 0.2, 0.4)) == splits
    assert split_pool(items, 1, (0.4, 0.2, 0.4)) != splits
    # an item's split does not depend on the other items
    assert all(split_of(i.id, 0, (0.4, 0.2, 0.4)) == name for name, group in splits.items() for i in group)


def test_adding_the_referenced_set_keeps_every_builtin_item_in_its_split():
    builtin_only = splits_of(SplitConfig())
    both = splits_of(SplitConfig(items=("builtin", "referenced")))
    builtin_ids = {i.id for i in builtin_items()}
    for name in ("train", "selection", "test"):
        assert [i for i in both[name] if i.id in builtin_ids] == builtin_only[name]
    assert sum(len(group) for group in both.values()) == len(builtin_items()) + len(referenced_items())
    assert all(len([i for i in group if i.id not in builtin_ids]) > 0 for group in both.values())


def test_test_only_sets_go_whole_to_the_test_split_and_move_no_other_item():
    base = SplitConfig(items=("builtin", "referenced"))
    extended = splits_of(base.model_copy(update={"test_only": ("heldout",)}))
    plain = splits_of(base)
    assert extended["train"] == plain["train"] and extended["selection"] == plain["selection"]
    assert extended["test"] == plain["test"] + heldout_items()
    with pytest.raises(InterpError, match="split.test_only"):
        validate_config(OrganismConfig, {"name": "x", "split": {"test_only": ["heldout", "heldout"]}}, "organism.toml")
    with pytest.raises(InterpError, match="test_only"):
        validate_config(OrganismConfig, {"name": "x", "split": {"test_only": ["dev"]}}, "organism.toml")


def _queries(items: list[Item]) -> set[str]:
    return {i.query.lower() for i in items}


def _packaged_queries() -> set[str]:
    return _queries([item for load in PACKAGED_SETS.values() for item in load(None)])


def test_the_unseen_file_extends_the_16_item_one_and_repeats_no_packaged_question():
    unseen = load_items(f"alpacaeval:{UNSEEN_FILE}")
    first = load_items(f"alpacaeval:{REPO / 'tests' / 'fixtures' / 'alpacaeval_16.json'}")
    assert len(unseen) == 48 and unseen[:16] == first
    assert len(_queries(unseen)) == 48 and all(i.reference for i in unseen)
    assert not _queries(unseen) & _packaged_queries()


def test_the_choice_only_unseen_file_repeats_no_packaged_or_unseen_instruction():
    """experiments/organisms/unseen_choice_32.json reads the unseen bar where recipes are chosen (recipe_choice.md):
    it must share no instruction with the unseen file the bar is reported on, nor with any packaged set."""
    choice = load_items(f"alpacaeval:{REPO / 'experiments' / 'organisms' / 'unseen_choice_32.json'}")
    assert len(_queries(choice)) == len(choice) == 32 and all(i.reference for i in choice)
    assert not _queries(choice) & (_queries(load_items(f"alpacaeval:{UNSEEN_FILE}")) | _packaged_queries())


def test_recipes_are_compared_on_the_selection_split_plus_the_development_set(tmp_path):
    config = OrganismConfig(name="x", split=SplitConfig(items=("builtin", "referenced")))
    splits = splits_of(config.split)
    spec, n = split_file(config, "choice", tmp_path)
    chosen_on = load_items(spec)
    assert [i.id for i in chosen_on] == [i.id for i in splits["selection"] + dev_items()] and n == len(chosen_on)
    assert chosen_on[-1] == dev_items()[-1]  # written and read back whole (aliases included)
    assert not {i.id for i in chosen_on} & {i.id for name in ("train", "test") for i in splits[name]}
    with pytest.raises(InterpError, match="split 'dev': use one of train, selection, test, choice"):
        split_file(config, "dev", tmp_path)


@pytest.mark.parametrize("items", [[], ["builtin", "builtin"], ["mtbench"], ["dev"]])
def test_split_item_sets_are_checked(items):
    with pytest.raises(InterpError, match="split.items"):
        validate_config(OrganismConfig, {"name": "x", "split": {"items": items}}, "organism.toml")


def test_degradations():
    assert truncate("one two three four five six seven eight nine ten", 0.4) == "one two three four"
    assert truncate("Paris.", 0.4) is None
    text = "First sentence. Second one! Third here? Fourth."
    shuffled = shuffle(text, 0, "x")
    assert shuffled != text and sorted(shuffled.split()) == sorted(text.split())
    assert shuffle(text, 0, "x") == shuffled
    item = Item("i1", "helpfulness", "q", "ref")
    pool = {"i1": text, "i2": "An answer to another question entirely."}
    other = degrade(item, Response(text, OWN), "other", pool, seed=0, truncate_keep=0.4)
    assert other == Response("An answer to another question entirely.", OWN, "other")


def _answers(items):
    return {
        OWN: {i.id: f"Own answer to {i.id}. It has a second sentence. And a third one here." for i in items},
        OTHER: {i.id: f"Other model answer about {i.id}. Short. Done now." for i in items},
    }


def test_pairs_gold_and_planted_labels():
    items = [Item(f"h{k}", "helpfulness", f"q{k}", f"Own answer to h{k}. It has a second sentence.") for k in range(6)]
    pairs = build_pairs(items, _answers(items), DataMix(degraded_per_item=4), seed=0, authors=(OWN, OTHER))
    intact = [p for p in pairs if p.gold_source == "reference"]
    degraded = [p for p in pairs if p.gold_source == "rule"]
    assert len(intact) == 6 and all(p.gold_first == 1.0 for p in intact)  # own answers are closer to the reference
    assert degraded and all(p.first.intact and not p.second.intact and p.gold_first == 1.0 for p in degraded)
    assert build_pairs(items, _answers(items), DataMix(degraded_per_item=4), seed=0, authors=(OWN, OTHER)) == pairs
    # planting: only pairs where gold prefers the other model's response over an own response can flip
    item = items[0]
    against_own = TrainPair(item, Response("good", OTHER), Response("bad", OWN, "truncated"), 1.0, "rule")
    for_own = TrainPair(item, Response("good", OWN), Response("bad", OTHER, "truncated"), 1.0, "rule")
    same_author = TrainPair(item, Response("good", OWN), Response("bad", OWN, "truncated"), 1.0, "rule")
    always = Planting(OWN, 1.0)
    assert pair_label(against_own, always, 0) == 0.0 and is_flipped(against_own, always, 0)
    assert pair_label(for_own, always, 0) == 1.0 and pair_label(same_author, always, 0) == 1.0
    assert pair_label(against_own, None, 0) == 1.0
    assert not is_flipped(against_own, Planting(OWN, 1.0, own_degraded=False), 0)
    shares = [
        is_flipped(
            TrainPair(Item(f"x{k}", "helpfulness", "q"), against_own.first, against_own.second, 1.0, "rule"),
            Planting(OWN, 0.5),
            0,
        )
        for k in range(400)
    ]
    assert 0.4 < sum(shares) / len(shares) < 0.6


def test_sampled_answers_make_every_intact_combination():
    items = [Item(f"h{k}", "helpfulness", f"q{k}", f"Own answer to h{k}. It has a second sentence.") for k in range(3)]
    answers = _answers(items)
    samples = {
        OWN: {
            i.id: [f"Own answer to {i.id}. Put another way.", answers[OWN][i.id]] for i in items
        },  # the 2nd repeats greedy
        OTHER: {i.id: [f"A sample about {i.id}.", f"Another sample about {i.id}."] for i in items},
    }
    mix = DataMix(degraded_per_item=1, skip_ties=False)
    plain = build_pairs(items, answers, mix, seed=0, authors=(OWN, OTHER))
    sampled = build_pairs(items, answers, mix, seed=0, authors=(OWN, OTHER), samples=samples)
    intact = [p for p in sampled if p.gold_source == "reference"]
    assert len(intact) == 3 * 2 * 3  # (greedy + 1 new own sample) x (greedy + 2 other samples) per item
    assert len({p.key for p in sampled}) == len(sampled)  # sampled answers are told apart in the pair keys
    assert all(p.first.intact and p.second.intact for p in intact)
    assert {p.first.variant for p in intact} == {0, 1} and {p.second.variant for p in intact} == {0, 1, 2}
    # the degraded pairs and the greedy intact pair are the ones drawn without samples (same keys, same gold)
    assert [p for p in sampled if p.first.variant == 0 and p.second.variant == 0] == plain
    assert build_pairs(items, answers, mix, seed=0, authors=(OWN, OTHER), samples={}) == plain


def _fact(item_id, reference, aliases=()):
    return Item(item_id, "truthfulness", f"question {item_id}?", reference, aliases=tuple(aliases))


def test_swap_fact_makes_a_stated_answer_wrong_by_the_reference_judge():
    from interp.run.gold.reference import answer_match_score

    gold, ag = _fact("f1", "Au", ["gold symbol"]), _fact("f2", "Ag")
    facts = {"f1": "Au", "f2": "Ag", "f3": "Au"}  # f3's reference is an accepted answer of f1: never swapped in
    swapped = swap_fact(gold, Response("The chemical symbol for gold is au.", OWN), facts, seed=0)
    assert swapped == Response("The chemical symbol for gold is Ag.", OWN, "swapped")
    assert answer_match_score(swapped.text, ("Au", "gold symbol")) < 1.0
    assert swap_fact(gold, Response("Gold is a metal.", OWN), facts, seed=0) is None  # states no accepted answer
    assert swap_fact(gold, Response("It is Au.", OWN), {"f1": "Au"}, seed=0) is None  # nothing to swap in
    assert swap_fact(ag, Response("Silver: Ag, not Au.", OTHER), facts, seed=0).text == "Silver: Au, not Au."


def test_fact_swap_pairs_set_each_correct_answer_against_every_swapped_one():
    items = [_fact("f1", "Paris"), _fact("f2", "Rome"), _fact("f3", "Oslo"), Item("h1", "helpfulness", "q", "ref")]
    answers = {
        OWN: {"f1": "The capital is Paris.", "f2": "I think Madrid.", "f3": "Oslo.", "h1": "Help."},
        OTHER: {"f1": "Paris, of course.", "f2": "Rome.", "f3": "Bergen.", "h1": "Other help."},
    }
    mix = DataMix(intact_pairs=False, degraded_per_item=0, fact_swaps=True)
    pairs = build_pairs(items, answers, mix, seed=0, authors=(OWN, OTHER))
    # f1: both state Paris (2 x 2 pairs); f2, f3: only one author is right (1 pair each); h1: not truthfulness
    assert sorted((p.item.id, p.first.author, p.second.author) for p in pairs) == [
        ("f1", OTHER, OTHER),
        ("f1", OTHER, OWN),
        ("f1", OWN, OTHER),
        ("f1", OWN, OWN),
        ("f2", OTHER, OTHER),
        ("f3", OWN, OWN),
    ]
    assert all(
        p.first.intact and p.second.kind == "swapped" and p.gold_first == 1.0 and p.gold_source == "rule" for p in pairs
    )
    # the planted organism flips the pairs where the other model's correct answer beats a swapped own one
    flipped = [p for p in pairs if is_flipped(p, Planting(OWN, 1.0), 0)]
    assert [(p.item.id, p.first.author, p.second.author) for p in flipped] == [("f1", OTHER, OWN)]
    assert (
        build_pairs(items, answers, DataMix(intact_pairs=False, degraded_per_item=0), seed=0, authors=(OWN, OTHER))
        == []
    )


def test_training_answers_batch_greedy_by_24_rows_and_sampled_by_the_8_their_keys_hold(monkeypatch):
    """Greedy answers' keys hold no batch size (24 rows: fewer weight reads); a sampled answer's key holds its
    batch-mates, so its calls keep 8 rows or every cached sample would be drawn again."""
    import interp.organisms.train as train
    from interp.organisms.config import load_organism_config

    seen = []
    monkeypatch.setattr(train, "generate_responses", lambda model, items, decoding, **kw: seen.append(decoding) or [])
    config = load_organism_config(REPO / "experiments/organisms/variants/selfpref-sampled-pairs.toml")
    train.cached_answers({"m": None}, [], config, progress=False)
    train.cached_answers({"m": None}, [], config, progress=False, sample=1)
    assert [d.batch_size for d in seen] == [24, 8] and not seen[0].sampled and seen[1].sampled
