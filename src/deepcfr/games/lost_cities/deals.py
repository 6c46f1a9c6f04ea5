"""Deals consistent with what one player has seen and the public action history, drawn uniformly:
the proposal of the exploiter's belief (search/belief.py replays each deal through the history
and weighs it by the target's likelihood of its moves).

``history_deals(game, obs, history, d, generator)`` (the game's ``history_deals`` capability)
returns ``[n * d, D]`` deals (``init_from_deal`` order; row ``i * d + j`` is sample ``j`` of
``obs[i]``) whose replay through ``history[i]`` gives back ``obs[i]``.

What the history fixes (one pass over it, all games at once): each card that left a hand (played
or discarded: the action names its kind) and when; each card taken from a pile (the pile's top,
so its kind is known) and by whom; when each player drew from the deck. What it leaves open: which
unseen cards the opponent holds now and, for each player, which of its cards came from its first
hand and which from which of its deck draws. A card that left a hand at time ``e`` came from the
first hand or from one of that player's deck draws before ``e``; a card still held, from any.

Sampling: the opponent's unknown cards uniformly from the unseen ones (as ``determinize``); then,
per player, its cards in order of leaving, each to a uniformly chosen free slot (first hand or a
deck draw) that came before it. The slots open to a card form a prefix in time that contains
those of every earlier-leaving card, so the number of choices at each step does not depend on
the earlier choices: every consistent assignment is equally likely, i.e. the deals are draws from
the uniform deal prior conditioned on everything the history and the observation fix. (The
observer's own timing is drawn too; it is known to the real observer but changes nothing the
opponent saw.) The cards left over are the deck's rest, in random order.

Copies (a colour's wagers): the deals are drawn with each copy as its own card, but a deal is a
sequence of kinds (the copies are indistinguishable in every observation), and one sequence of
kinds is reached by as many labellings as there are ways to match the opponent's copies of a kind
to the slots holding that kind (each copy after its slot), divided by the orders of its unknown
copies. So each deal comes with an importance weight, the inverse of that count: the weighted
deals are the prior's (``history_deals`` returns the log weights; without copies they are 0). The
observer's own copies get no weight: they change nothing the opponent saw. A card taken from a
pile and later a card of the same kind played: the taken copy is the one that leaves.
"""

from __future__ import annotations

import torch

from .determinize import opponent_hand_size
from .layout import LOC_HAND, LOC_OPP_KNOWN, LOC_UNKNOWN

_LATER = 1 << 40  # exit time of a card still in a hand
_NEVER = 1 << 50  # exit time of an empty card column / entry time of an empty slot


def history_deals(
    game, obs: torch.Tensor, history: torch.Tensor, d: int, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(``[n * d, D]`` int64 deals, ``[n * d]`` float64 log importance weights; module docstring)
    for the observations ``obs [n, obs_size]`` (any observer) and public histories
    ``history [n, L]`` (actions in order, -1 after the last)."""
    r = game.rules
    D, H, K, R1, C = r.deck_size, r.hand_size, r.num_kinds, r.n_ranks + 1, r.n_colors
    device = obs.device
    n = obs.shape[0]
    if history.dim() != 2 or history.shape[0] != n:
        raise ValueError(f"history must have shape [{n}, L], got {tuple(history.shape)}")
    history = history.to(device=device, dtype=torch.long)
    observer = game.obs_player(obs)
    loc = obs[:, :D].long()
    kind_of = game.tables(device).card_kind_index.long()  # [D] kind index of each card id

    public = _public_pass(game, history)
    mover, exit_kind, draw_rank = public["mover"], public["exit_kind"], public["draw_rank"]
    held_from_piles = public["held_from_piles"]  # [n, 2, K]
    total_draws = public["draws"]  # [n]

    # The history and the observation must agree on what the opponent holds from the piles.
    rows = torch.arange(n, device=device)
    known = torch.zeros(n, K, dtype=torch.long, device=device).scatter_add_(
        1, kind_of.expand(n, D), (loc == LOC_OPP_KNOWN).long()
    )
    if not torch.equal(known, held_from_piles[rows, 1 - observer]):
        bad = int((known != held_from_piles[rows, 1 - observer]).any(dim=1).nonzero()[0])
        raise ValueError(
            f"row {bad}: the action history does not give the cards the observation knows in the "
            "opponent's hand (the history is not this observation's)"
        )

    N = n * d
    rep = lambda x: x.repeat_interleave(d, dim=0)  # noqa: E731 - per-sample copies of per-game rows
    loc_n, observer_n = rep(loc), rep(observer)

    # The opponent's unknown cards: a random order of the unseen cards, its share first.
    unknown = loc_n == LOC_UNKNOWN
    opp_free = opponent_hand_size(game, rep(obs)) - (loc_n == LOC_OPP_KNOWN).sum(dim=1)
    keys = torch.rand(N, D, generator=generator, device=device)
    keys = torch.where(unknown, keys, 2.0)
    order = keys.argsort(dim=1)
    rank = torch.empty_like(order).scatter_(1, order, torch.arange(D, device=device).expand(N, D))
    to_opp = unknown & (rank < opp_free[:, None])

    # Each player's cards still held that came from its first hand or a deck draw, by kind.
    own_hand = (
        torch.zeros(N, K, dtype=torch.long, device=device).scatter_add_(
            1, kind_of.expand(N, D), (loc_n == LOC_HAND).long()
        )
        - rep(held_from_piles)[torch.arange(N), observer_n]
    )
    opp_hand = torch.zeros(N, K, dtype=torch.long, device=device).scatter_add_(1, kind_of.expand(N, D), to_opp.long())
    if bool((own_hand < 0).any()):
        raise ValueError(
            "the action history gives the observer more cards from the piles than its hand holds "
            "(the history is not this observation's)"
        )

    deal_kind = torch.full((N, D), -1, dtype=torch.long, device=device)
    L = history.shape[1]
    t = torch.arange(L, device=device)
    log_weights = torch.zeros(N, dtype=torch.float64, device=device)
    wager_kinds = torch.arange(C, device=device) * R1 if r.n_wagers > 1 else None
    for seat in (0, 1):
        held = torch.where((observer_n == seat)[:, None], own_hand, opp_hand)  # [N, K]
        slot_kind, slot_pos, log_matchings = _assign_slots(
            rep(torch.where((mover == seat) & (exit_kind >= 0), t, _NEVER)),
            rep(exit_kind.clamp(min=0)),
            held,
            rep(torch.where((mover == seat) & (draw_rank >= 0), t, _NEVER)),
            rep(draw_rank),
            H,
            seat,
            wager_kinds,
            generator,
        )
        deal_kind.scatter_(1, slot_pos, slot_kind)
        if wager_kinds is not None:  # the opponent's copies: 1 / (matchings / orders of its unknown copies)
            theirs = observer_n != seat
            unknown_copies = torch.lgamma(opp_hand[:, wager_kinds].double() + 1).sum(dim=1)
            log_weights += torch.where(theirs, unknown_copies - log_matchings, 0.0)

    # The deck's rest: the unseen cards not in the opponent's hand, in their random order.
    rest = unknown & ~to_opp
    rest_pos = 2 * H + rep(total_draws)[:, None] + (rank - opp_free[:, None])
    spare = deal_kind.shape[1]  # writes of the other cards land in an extra column, dropped below
    target_col = torch.where(rest, rest_pos, spare)
    deal_kind = torch.cat([deal_kind, torch.zeros(N, 1, dtype=torch.long, device=device)], dim=1)
    deal_kind.scatter_(1, target_col, kind_of.expand(N, D))
    deal_kind = deal_kind[:, :D]
    if bool((deal_kind < 0).any()):
        raise ValueError(
            "the action history and the observation do not account for every card of the deck "
            "(the history is not this observation's)"
        )
    return _ids_from_kinds(game, deal_kind), log_weights


def _public_pass(game, history: torch.Tensor) -> dict[str, torch.Tensor]:
    """What the history fixes, per game and time: the mover, the kind of a card leaving the mover's
    hand that came from its first hand or a deck draw (else -1), the rank of a deck draw among the
    game's deck draws (else -1); at the end, the cards each player holds from the piles, by kind."""
    r = game.rules
    K, R1, C, P = r.num_kinds, r.n_ranks + 1, r.n_colors, r.cards_per_color
    n, L = history.shape
    device = history.device
    rows = torch.arange(n, device=device)
    mover = torch.zeros(n, L, dtype=torch.long, device=device)
    exit_kind = torch.full((n, L), -1, dtype=torch.long, device=device)
    draw_rank = torch.full((n, L), -1, dtype=torch.long, device=device)
    piles = torch.zeros(n, C, P + 1, dtype=torch.long, device=device)  # kinds on each pile, bottom first
    heights = torch.zeros(n, C, dtype=torch.long, device=device)
    from_piles = torch.zeros(n, 2, K, dtype=torch.long, device=device)
    draws = torch.zeros(n, dtype=torch.long, device=device)
    seat = torch.zeros(n, dtype=torch.long, device=device)
    deck_action = r.draw_deck_action
    used = int((history >= 0).sum(dim=1).max()) if n else 0
    for t in range(used):
        a = history[:, t]
        live = a >= 0
        mover[:, t] = seat
        card = live & (a < deck_action)
        kind = a.clamp(min=0) % K
        taken = card & (from_piles[rows, seat, kind] > 0)  # the pile-taken copy leaves first
        from_piles[rows, seat, kind] -= taken.long()
        exit_kind[:, t] = torch.where(card & ~taken, kind, -1)
        discard = card & (a >= K)
        colour = kind // R1
        piles[rows, colour, heights[rows, colour]] = torch.where(
            discard, kind, piles[rows, colour, heights[rows, colour]]
        )
        heights[rows, colour] += discard.long()
        deck = live & (a == deck_action)
        draw_rank[:, t] = torch.where(deck, draws, -1)
        draws += deck.long()
        pile = live & (a > deck_action)
        c = (a - deck_action - 1).clamp(0, C - 1)
        heights[rows, c] -= pile.long()
        top = piles[rows, c, heights[rows, c].clamp(min=0)]
        from_piles[rows, seat, top] += pile.long()
        seat = torch.where(live & (a >= deck_action), 1 - seat, seat)
    if bool((heights < 0).any()):
        raise ValueError("the action history draws from an empty pile")
    return {
        "mover": mover,
        "exit_kind": exit_kind,
        "draw_rank": draw_rank,
        "held_from_piles": from_piles,
        "draws": draws,
    }


def _assign_slots(exit_time, exit_kind, held, entry_time, draw_rank, H: int, seat: int, copied_kinds, generator):
    """One player's cards from its first hand and deck draws, each put in a uniformly chosen free
    slot opened before the card left (module docstring). ``exit_time``/``exit_kind [N, L]``: the
    cards that left (time, kind; time _NEVER where none); ``held [N, K]``: counts by kind of the
    cards still held; ``entry_time``/``draw_rank [N, L]``: the deck draws (time, rank; _NEVER where
    none). Returns (kind [N, S], deal position [N, S]) of every slot, and [N] float64 the log of the
    number of ways the cards of each of ``copied_kinds`` (None: no kind has copies) could be matched
    to the slots holding that kind, each after its slot."""
    N, L = exit_time.shape
    K = held.shape[1]
    device = exit_time.device
    # Slots in time order: the first hand (opened at -1), then the deck draws.
    entry_sorted, by_entry = entry_time.sort(dim=1)
    S = H + int((entry_sorted < _NEVER).sum(dim=1).max())
    entries = torch.cat([torch.full((N, H), -1, dtype=torch.long, device=device), entry_sorted[:, : S - H]], dim=1)
    hand_pos = seat * H + torch.arange(H, device=device).expand(N, H)
    draw_pos = 2 * H + draw_rank.gather(1, by_entry[:, : S - H])
    positions = torch.cat([hand_pos, draw_pos], dim=1)
    opened = entries < _NEVER
    # Cards in order of leaving: those that left, then those still held.
    held_kinds = torch.arange(K, device=device).repeat_interleave(held.max().clamp(min=1).item() if K else 1)
    per_copy = torch.arange(held_kinds.numel(), device=device) - torch.searchsorted(held_kinds, held_kinds)
    has_copy = per_copy[None, :] < held[:, held_kinds]  # [N, K * max copies]
    times = torch.cat([exit_time, torch.where(has_copy, _LATER, _NEVER)], dim=1)
    kinds = torch.cat([exit_kind, held_kinds.expand(N, -1)], dim=1)
    times, order = times.sort(dim=1)
    kinds = kinds.gather(1, order)
    cards = int((times < _NEVER).sum(dim=1).max())
    if bool(((times < _NEVER).sum(dim=1) != opened.sum(dim=1)).any()):
        raise ValueError(
            f"seat {seat}: the history and the observation give a different number of cards than "
            "its first hand and deck draws (the history is not this observation's)"
        )
    free = opened.clone()
    slot_kind = torch.full((N, S), -1, dtype=torch.long, device=device)
    rows = torch.arange(N, device=device)
    for i in range(cards):
        real = times[:, i] < _NEVER
        choices = free & (entries < times[:, i : i + 1])
        if bool((real & ~choices.any(dim=1)).any()):
            raise ValueError(
                f"seat {seat}: a card left the hand before any slot could have brought it "
                "(the history is not this observation's)"
            )
        pick = torch.where(choices, torch.rand(N, S, generator=generator, device=device), -1.0).argmax(dim=1)
        slot_kind[rows, pick] = torch.where(real, kinds[:, i], slot_kind[rows, pick])
        free[rows, pick] &= ~real
    log_matchings = torch.zeros(N, dtype=torch.float64, device=device)
    for kind in [] if copied_kinds is None else copied_kinds.tolist():
        card = (kinds[:, :cards] == kind) & (times[:, :cards] < _NEVER)  # [N, M], in order of leaving
        slot = slot_kind == kind  # [N, S]
        before = ((entries[:, None, :] < times[:, :cards, None]) & slot[:, None, :]).sum(dim=2)
        choices = before - (card.long().cumsum(dim=1) - 1)  # the earlier-leaving copies took some
        log_matchings += torch.where(card, choices.clamp(min=1).double().log(), 0.0).sum(dim=1)
    # Slot columns a row does not have (fewer deck draws) rewrite its first slot's position.
    positions = torch.where(opened, positions, positions[:, :1])
    slot_kind = torch.where(opened, slot_kind, slot_kind[:, :1])
    return slot_kind, positions, log_matchings


def _ids_from_kinds(game, deal_kind: torch.Tensor) -> torch.Tensor:
    """Card ids for a deal given by kinds: the copies of a kind (wagers) in position order."""
    r = game.rules
    D = r.deck_size
    device = deal_kind.device
    kind_of = game.tables(device).card_kind_index.long()  # [D], ascending (ids run colour-major)
    order = (deal_kind * D + torch.arange(D, device=device)).argsort(dim=1)
    ids = torch.arange(D, device=device).expand_as(deal_kind)  # the sorted kinds are kind_of itself
    if not torch.equal(deal_kind.gather(1, order), kind_of.expand_as(deal_kind)):
        raise ValueError("a proposed deal's cards are not the deck's (the history is not this observation's)")
    return torch.empty_like(deal_kind).scatter_(1, order, ids)


# Particle moves of the belief (search/belief.py) against a deterministic target: a deal that
# was consistent with an earlier decision is carried to the current one, and a deal is moved by
# swapping two of the target's possible cards. Both work on kinds, and every sequence of kinds
# is equally likely under the deal prior (a kind sequence is reached by the same number of
# labellings, the product of the kinds' copies' orders, whatever the order), so the posterior
# of a deterministic target is uniform over the consistent kind sequences.

_OWN, _OLD, _FREE = 0, 1, 2  # a deal position's role in carry_deals


def carry_deals(
    game,
    obs: torch.Tensor,
    history: torch.Tensor,
    fresh: torch.Tensor,
    previous: torch.Tensor,
    previous_length: torch.Tensor,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Deals for ``obs [n, obs_size]`` and ``history [n, L]`` that keep what ``previous [n * d, D]``
    (deals consistent with the first ``previous_length [n]`` actions of each history) gave the
    observer's opponent, the target, from its first hand and its deck draws up to then. The
    observer's own cards come from ``fresh [n * d, D]`` (``history_deals`` of the same rows: any
    consistent timing of them); the rest, the target's deck draws since and the deck, are the
    leftover cards in a uniformly random order: the prior given the carried cards. Returns
    (deals [n * d, D], log weights [n * d] float64): where the carried cards and the observer's do
    not fit in one deck (the target held a card the observer has seen since), the row is
    ``fresh``'s and its log weight -inf (not carried); else the log likelihood, given the carried
    deal's cards, of the cards the observer drew from the deck since (up to a constant shared by a
    row's deals): ``sum_k log(f_k! / l_k!)`` over the kinds, ``f_k`` the previous deal's cards of
    kind k not yet drawn by the observer nor held by the target then, ``l_k`` those left now. It
    differs between deals only where a kind has copies (wagers): a target holding a copy of a kind
    the observer drew leaves fewer ways to draw it. The carried rows are not checked against the
    target's moves: the belief replays them."""
    r = game.rules
    D, H, K = r.deck_size, r.hand_size, r.num_kinds
    device = obs.device
    n, N = obs.shape[0], fresh.shape[0]
    d = N // n if n else 0
    kind_of = game.tables(device).card_kind_index.long()
    history = history.to(device=device, dtype=torch.long)
    public = _public_pass(game, history)
    observer = game.obs_player(obs).long()
    mover, draw_rank = public["mover"], public["draw_rank"]
    L = history.shape[1]
    rows = torch.arange(n, device=device)
    role = torch.full((n, D + 1), _FREE, dtype=torch.long, device=device)  # column D: writes to drop
    seat_hand = torch.arange(H, device=device)
    role[rows[:, None], observer[:, None] * H + seat_hand] = _OWN
    role[rows[:, None], (1 - observer)[:, None] * H + seat_hand] = _OLD
    drawn_role = torch.where(
        mover == observer[:, None],
        _OWN,
        torch.where(torch.arange(L, device=device) < previous_length.to(device)[:, None], _OLD, _FREE),
    )
    role.scatter_(1, torch.where(draw_rank >= 0, 2 * H + draw_rank, D), drawn_role)
    role = role[:, :D].repeat_interleave(d, dim=0)
    kinds = torch.where(role == _OLD, kind_of[previous.long()], torch.where(role == _OWN, kind_of[fresh.long()], -1))
    deck_counts = torch.zeros(K, dtype=torch.long, device=device).scatter_add_(0, kind_of, torch.ones_like(kind_of))
    placed = torch.zeros(N, K + 1, dtype=torch.long, device=device).scatter_add_(
        1, torch.where(kinds >= 0, kinds, K), torch.ones_like(kinds)
    )[:, :K]
    leftover = deck_counts - placed
    carried = (leftover >= 0).all(dim=1)
    # The previous deal's free cards by kind: those after the deck draws made by then.
    then = torch.arange(L, device=device) < previous_length.to(device)[:, None]
    draws_then = ((draw_rank >= 0) & then).sum(dim=1)
    was_free = (torch.arange(D, device=device) >= 2 * H + draws_then[:, None]).repeat_interleave(d, dim=0)
    free_then = torch.zeros(N, K, dtype=torch.long, device=device).scatter_add_(
        1, kind_of[previous.long()], was_free.long()
    )
    log_weight = (torch.lgamma(free_then.double() + 1) - torch.lgamma(leftover.clamp(min=0).double() + 1)).sum(dim=1)
    log_weight = log_weight.masked_fill(~carried, -torch.inf)
    # The leftover cards (the first ``leftover[k]`` ids of each kind k) in random order, into the
    # free positions in order.
    copy_index = torch.arange(D, device=device) - torch.searchsorted(kind_of, kind_of)
    spare = copy_index[None, :] < leftover.clamp(min=0)[:, kind_of]
    keys = torch.where(spare, torch.rand(N, D, generator=generator, device=device), 2.0)
    cards = keys.argsort(dim=1)
    free = role == _FREE
    positions = torch.where(free, torch.arange(D, device=device), D + torch.arange(D, device=device)).argsort(dim=1)
    columns = torch.where(torch.arange(D, device=device) < free.sum(dim=1, keepdim=True), positions, D)
    kinds = torch.cat([kinds, torch.zeros(N, 1, dtype=torch.long, device=device)], dim=1)
    kinds.scatter_(1, columns, kind_of[cards])
    kinds = torch.where(carried[:, None], kinds[:, :D], kind_of[fresh.long()])
    return _ids_from_kinds(game, kinds), log_weight


def deal_log_weights(game, obs: torch.Tensor, history: torch.Tensor, deals: torch.Tensor) -> torch.Tensor:
    """``[n * d]`` float64: the log importance weight ``history_deals`` gives a deal, for any deals
    ``[n * d, D]`` consistent with ``obs [n, obs_size]`` and ``history [n, L]`` (not only its own
    samples): the prior over kind sequences is uniform and ``history_deals`` reaches a sequence by
    as many labellings as there are matchings of the opponent's copies to its slots over orders of
    its copies still held, which leaves ``-sum log(choices)`` over the opponent's plays and
    discards of a copied kind from its first hand or deck draws, ``choices`` the slots of that kind
    opened before it less the earlier such exits of that kind (0 without copies). What an
    independence Metropolis-Hastings move to a fresh ``history_deals`` proposal needs of the deal
    it leaves."""
    r = game.rules
    D, H, R1, C = r.deck_size, r.hand_size, r.n_ranks + 1, r.n_colors
    device = obs.device
    n, N = obs.shape[0], deals.shape[0]
    if r.n_wagers <= 1 or n == 0:
        return torch.zeros(N, dtype=torch.float64, device=device)
    d = N // n
    history = history.to(device=device, dtype=torch.long)
    history = history[:, : int((history >= 0).sum(dim=1).max())]
    public = _public_pass(game, history)
    target = 1 - game.obs_player(obs).long()
    rep = lambda x: x.repeat_interleave(d, dim=0)  # noqa: E731 - per-sample copies of per-game rows
    kinds = game.tables(device).card_kind_index.long()[deals.long()]  # [N, D]
    # The target's slots: its first hand (open from the start) and its deck draws (open once drawn).
    first_hand = kinds.gather(1, rep(target)[:, None] * H + torch.arange(H, device=device))  # [N, H]
    drawn = rep((public["mover"] == target[:, None]) & (public["draw_rank"] >= 0))  # [N, L]
    drawn_kind = torch.where(drawn, kinds.gather(1, (2 * H + rep(public["draw_rank"])).clamp(0, D - 1)), -1)
    exit_kind = rep(torch.where(public["mover"] == target[:, None], public["exit_kind"], -1))  # [N, L]
    log_w = torch.zeros(N, dtype=torch.float64, device=device)
    for colour in range(C):
        kind = colour * R1  # a colour's wagers, its copied kind
        leaving = exit_kind == kind
        if not bool(leaving.any()):
            continue
        opened = (drawn_kind == kind).long().cumsum(dim=1) - (drawn_kind == kind).long()  # drawn before t
        before = (first_hand == kind).sum(dim=1, keepdim=True) + opened
        choices = before - (leaving.long().cumsum(dim=1) - 1)
        log_w -= torch.where(leaving, choices.clamp(min=1).double().log(), 0.0).sum(dim=1)
    return log_w


def swap_deals(
    game, obs: torch.Tensor, history: torch.Tensor, deals: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """``deals [n * d, D]`` (consistent with ``obs [n, obs_size]`` and ``history [n, L]``) each with
    the cards of two positions swapped, both holding a kind the target (the observer's opponent)
    never played or discarded from its hand: one of the target's positions (its first hand or a
    deck draw of its: a card it still holds), uniformly, and another of the target's or of the
    deck still to be drawn, uniformly (a card the observer cannot see). Those position sets are
    the same before and after the swap, so the move is symmetric, and a Metropolis step over the
    uniform kind sequences keeps the swapped deal wherever it is as consistent with the target's
    moves (the belief replays it). A deal with no such pair is returned unchanged."""
    r = game.rules
    D, H = r.deck_size, r.hand_size
    device = obs.device
    n, N = obs.shape[0], deals.shape[0]
    d = N // n if n else 0
    history = history.to(device=device, dtype=torch.long)
    public = _public_pass(game, history)
    target = 1 - game.obs_player(obs).long()
    rows = torch.arange(n, device=device)
    theirs = torch.zeros(n, D + 1, dtype=torch.bool, device=device)
    theirs[rows[:, None], target[:, None] * H + torch.arange(H, device=device)] = True
    drawn_by_target = (public["mover"] == target[:, None]) & (public["draw_rank"] >= 0)
    theirs.scatter_(1, torch.where(drawn_by_target, 2 * H + public["draw_rank"], D), drawn_by_target)
    theirs = theirs[:, :D]
    undrawn = torch.arange(D, device=device) >= 2 * H + public["draws"][:, None]
    kind_of = game.tables(device).card_kind_index.long()
    K = r.num_kinds
    left = (public["mover"] == target[:, None]) & (public["exit_kind"] >= 0)
    played = torch.zeros(n, K + 1, dtype=torch.long, device=device).scatter_add_(
        1, torch.where(left, public["exit_kind"], K), torch.ones_like(public["exit_kind"])
    )[:, :K]
    kinds = kind_of[deals.long()]
    never_played = played.repeat_interleave(d, dim=0).gather(1, kinds) == 0  # [N, D]
    theirs = theirs.repeat_interleave(d, dim=0) & never_played
    either = theirs | (undrawn.repeat_interleave(d, dim=0) & never_played)
    first = torch.where(theirs, torch.rand(N, D, generator=generator, device=device), -1.0).argmax(dim=1)
    either[torch.arange(N, device=device), first] = False
    second = torch.where(either, torch.rand(N, D, generator=generator, device=device), -1.0).argmax(dim=1)
    second = torch.where(either.any(dim=1) & theirs.any(dim=1), second, first)  # nothing to swap: unchanged
    i = torch.arange(N, device=device)
    a, b = kinds[i, first].clone(), kinds[i, second].clone()
    kinds[i, first], kinds[i, second] = b, a
    return _ids_from_kinds(game, kinds)


__all__ = ["carry_deals", "deal_log_weights", "history_deals", "swap_deals"]
