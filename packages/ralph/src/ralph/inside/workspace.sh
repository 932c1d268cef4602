#!/bin/sh
# The loop's workspace, kept by the sandbox: the agent's own repository (workspace.py).
#
# The host never runs git in it. These steps run inside the sandbox, before the agent
# (`prepare`), after it (`export`) and when the loop stops (`leftovers`); what they hand
# back is one bundle in $RALPH_OUT, which the host checks before any of it is used
# (inbox.py). Everything here is the agent's to tamper with, so nothing here is trusted:
# a step that fails only costs the loop its iteration's work, never the host anything.
#
# usage: workspace.sh prepare | export | leftovers | run AGENT [ARGS...] | exec AGENT [ARGS...]
# environment:
#   RALPH_WS       the workspace (the agent's working directory)
#   RALPH_OBJECTS  the project's object directory, read-only (git alternates); may be empty
#   RALPH_BRANCH   the branch the agent works on
#   RALPH_BASE     the commit the host wants the iteration to start from; empty: none yet
#   RALPH_TAKEN    the last tip the host received from this workspace; empty: none yet
#   RALPH_OUT      where the bundle goes
#   RALPH_STAMP    the message of the leftovers' stash (`sgf-recovery <loop-id> <time>`)
#   RALPH_LOOP_ID  the loop's id (its sentinels name it)
set -u
export GIT_NO_REPLACE_OBJECTS=1 GIT_TERMINAL_PROMPT=0
# pensa's exports are the shared database's, not anyone's leftovers: they are written again
# by the next pn command, so they are never stashed and never block a step.
TRACKER=.pensa

g() {
  git -c core.hooksPath=/dev/null -c advice.detachedHead=false -c gc.auto=0 "$@"
}

say() {
  echo "ralph workspace: $*" >&2
}

commit_of() {
  g rev-parse -q --verify "$1^{commit}" 2>/dev/null
}

dirty() {
  [ -n "$(g status --porcelain --untracked-files=all -- . ":(exclude)$TRACKER" 2>/dev/null)" ]
}

unfinished() {
  # an operation the agent left half-done in its repository ends before the next iteration
  for op in rebase merge cherry-pick revert am; do
    g "$op" --abort >/dev/null 2>&1
  done
  g bisect reset >/dev/null 2>&1
  return 0
}

create() {
  g init -q . || return 1
  g symbolic-ref HEAD "refs/heads/$RALPH_BRANCH"
  if [ -n "$RALPH_OBJECTS" ]; then
    echo "$RALPH_OBJECTS" >.git/objects/info/alternates || return 1
  fi
  # the loop's sentinels are messages to ralph, never part of the work
  printf '.ralph-complete\n.ralph-ding\n' >>.git/info/exclude
  # pensa's export before each commit, as `pn init` sets it up in the project: the agent's
  # commit carries its tracker changes (the close travels with the work), never pn's marker
  printf '%s\n' '#!/bin/sh' '[ -d .pensa ] && command -v pn >/dev/null 2>&1 || exit 0' \
    'exec pn export >/dev/null' >.git/hooks/pre-commit && chmod +x .git/hooks/pre-commit
  if [ -n "$RALPH_BASE" ]; then
    g update-ref "refs/heads/$RALPH_BRANCH" "$RALPH_BASE" && g reset -q --hard
  fi
}

sentinels() {
  # this loop's sentinels (empty, or naming it) that came with a commit are stale: an
  # iteration ends the loop only with one it wrote (the host's sentinel.py reads them)
  for f in .ralph-complete */.ralph-complete */*/.ralph-complete; do
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    named=$(head -c 4097 "$f" | tr -d '[:space:]')
    if [ -z "$named" ] || [ "$named" = "${RALPH_LOOP_ID:-}" ]; then
      rm -f "$f"
    fi
  done
}

prepare() {
  cd "$RALPH_WS" || return 1
  if [ ! -d .git ]; then
    create && sentinels
    return
  fi
  [ -n "$RALPH_BASE" ] || return 0
  head=$(commit_of HEAD)
  [ "$head" = "$RALPH_BASE" ] && [ "$(g symbolic-ref -q HEAD)" = "refs/heads/$RALPH_BRANCH" ] && return 0
  if [ -n "$head" ] && [ "$head" != "$RALPH_TAKEN" ] &&
    ! g merge-base --is-ancestor "$head" "$RALPH_BASE" 2>/dev/null; then
    return 0 # commits the host has not received yet: the agent goes on on top of them
  fi
  unfinished
  stashed=
  if dirty; then
    g stash push -q --include-untracked -m "ralph: left by the last iteration" \
      -- . ":(exclude)$TRACKER" && stashed=yes
  fi
  g checkout -q -f -B "$RALPH_BRANCH" "$RALPH_BASE" || return 1
  g clean -q -f -d -- "$TRACKER" >/dev/null 2>&1
  if [ -n "$stashed" ] && ! g stash pop -q >/dev/null 2>&1; then
    g reset -q --hard
    say "the last iteration's uncommitted changes do not apply to $RALPH_BRANCH any more;" \
      "they are kept in \`git stash list\`"
  fi
  sentinels
  return 0
}

bundle() {
  # bundle REFS...: the named refs, without what the host has (RALPH_BASE), into $RALPH_OUT
  out="$RALPH_OUT/workspace.bundle"
  if [ -n "$RALPH_BASE" ]; then
    g bundle create "$out.tmp" "$@" --not "$RALPH_BASE" >/dev/null 2>&1
  else
    g bundle create "$out.tmp" "$@" >/dev/null 2>&1
  fi || return 1
  mv "$out.tmp" "$out"
}

export_tip() {
  # HEAD's commits the host lacks, as refs/ralph/export; the agent may have left its branch
  head=$(commit_of HEAD) || return 0
  [ "$head" = "$RALPH_BASE" ] && return 0
  if [ -n "$RALPH_BASE" ] && g merge-base --is-ancestor "$head" "$RALPH_BASE" 2>/dev/null; then
    return 0 # nothing the host lacks
  fi
  g update-ref refs/ralph/export "$head"
  echo refs/ralph/export
}

done_() {
  # the host runs the step again unless this says it ran (a forged one only delays the
  # commits to the next export: they stay in the workspace until the host has them)
  : >"$RALPH_OUT/exported"
}

tracker_export() {
  # An agent whose git runs no hooks (gemini-cli's shell tool empties core.hooksPath) commits
  # pn's marker instead of pensa's export: its closes would not travel with the work, and the
  # commit could never land on a checkout that has the marker untracked. Its last new commit
  # is finished as the pre-commit hook would have: pensa's files in, the marker out. Only
  # where the loop's database is at hand (the agent's own run), with hooks off, through an
  # index of its own (whatever the agent left staged stays out of the commit).
  [ -n "${PN_SHARED_DB:-}" ] && command -v pn >/dev/null 2>&1 || return 0
  head=$(commit_of HEAD) || return 0
  [ "$head" = "$RALPH_BASE" ] && return 0
  if [ -n "$RALPH_BASE" ] && g merge-base --is-ancestor "$head" "$RALPH_BASE" 2>/dev/null; then
    return 0
  fi
  g cat-file -e "$head:$TRACKER/uncommitted" 2>/dev/null || return 0
  scratch=$(mktemp -d) || return 1
  index="$scratch/index"
  GIT_INDEX_FILE=$index g read-tree HEAD &&
    GIT_INDEX_FILE=$index pn export --stage >/dev/null &&
    GIT_INDEX_FILE=$index g rm -q --cached --ignore-unmatch -- "$TRACKER/uncommitted" &&
    GIT_INDEX_FILE=$index g commit -q --amend --no-edit --allow-empty
  finished=$?
  rm -rf "$scratch"
  [ "$finished" -eq 0 ] || return 1
  g reset -q HEAD -- "$TRACKER" >/dev/null 2>&1
  return 0
}

export_() {
  cd "$RALPH_WS" || return 1
  rm -f "$RALPH_OUT/workspace.bundle" "$RALPH_OUT/workspace.bundle.tmp" "$RALPH_OUT/exported"
  tracker_export || say "could not export pensa's files into the last commit"
  g update-ref -d refs/ralph/export >/dev/null 2>&1
  refs=$(export_tip)
  if [ -n "$refs" ]; then
    bundle $refs || return 1
  fi
  done_
}

leftovers() {
  cd "$RALPH_WS" || return 1
  rm -f "$RALPH_OUT/workspace.bundle" "$RALPH_OUT/workspace.bundle.tmp" "$RALPH_OUT/exported"
  [ -d .git ] || { done_; return 0; }
  unfinished
  g update-ref -d refs/ralph/export >/dev/null 2>&1
  g update-ref -d refs/ralph/leftovers >/dev/null 2>&1
  refs=$(export_tip)
  if dirty && [ -n "$(commit_of HEAD)" ]; then
    if g stash push -q --include-untracked -m "$RALPH_STAMP" -- . ":(exclude)$TRACKER"; then
      g update-ref refs/ralph/leftovers refs/stash
      refs="$refs refs/ralph/leftovers"
    fi
  fi
  if [ -n "$refs" ]; then
    bundle $refs || return 1
  fi
  done_
}

run() {
  # prepare, run the agent with the real stdin and forward signals to it, then export; an
  # agent stopped by a signal gets no export here (the loop's stop exports what it left)
  prepare || say "could not prepare the workspace"
  exec 3<&0
  "$@" 0<&3 3<&- &
  agent=$!
  exec 3<&-
  signalled=
  trap 'signalled=yes; kill -INT "$agent" 2>/dev/null' INT
  trap 'signalled=yes; kill -TERM "$agent" 2>/dev/null' TERM
  trap 'signalled=yes; kill -HUP "$agent" 2>/dev/null' HUP
  status=0
  wait "$agent"
  status=$?
  while kill -0 "$agent" 2>/dev/null; do
    wait "$agent"
    status=$?
  done
  trap - INT TERM HUP
  if [ -z "$signalled" ]; then
    export_ || say "could not export the iteration's commits"
  fi
  exit "$status"
}

exec_() {
  # interactive: prepare, then the agent in this very process (its terminal, its signals)
  prepare || say "could not prepare the workspace"
  exec "$@"
}

step=${1:-}
[ $# -gt 0 ] && shift
case "$step" in
prepare) prepare ;;
export) export_ ;;
leftovers) leftovers ;;
run) run "$@" ;;
exec) exec_ "$@" ;;
*)
  say "unknown step: $step"
  exit 2
  ;;
esac
