"""Without an OS sandbox the line analysis lets a line run only when it knows what each of its
programs writes: a program it does not know, a program file given by a path, a script run by
an interpreter, and a reader whose options or operands name a file it writes are refused; the
programs real sessions run that it does read are not."""

from __future__ import annotations

from pathlib import Path

import pytest
from write_guard._decide import resolve_all
from write_guard._fallback import fallback_doubt, git_outside, written_through_links
from write_guard._paths import PathContext
from write_guard._policy import Policy
from write_guard._runtime import changes_nothing
from write_guard._surface import analysed_bash_surface, extract_surface


def _doubt(line: str) -> str | None:
    surface = analysed_bash_surface(line)
    return fallback_doubt(surface.programs, line, [target.path for target in surface.targets])


@pytest.mark.parametrize(
    "line",
    [
        "uniq a.txt /out/x",
        "xxd a.txt /out/x",
        "iconv -f utf-8 -t utf-8 -o /out/x a.txt",
        "sort -uo /out/x a.txt",
        "sort --out=/out/x a.txt",
        "sort -T /out a.txt",
        "sort --compress-program=sh a.txt",
        "shuf -o /out/x a.txt",
        "tree -o /out/x",
        "file -C -m /out/magic",
        "sdiff -o /out/x a b",
        "strace -o /out/x true",
        "gdb -batch -ex 'shell touch /out/x'",
        "./tool",
        "bin/tool --flag",
        ".venv/bin/pytest -q",
        "/tmp/x/tool",
        "python3 s.py",
        "python3 -m http.server",
        "node build.js",
        "golangci-lint run",
        "gh repo clone o/r",
        "gh run download 1 -D /out",
        "curl -s --trace /out/x file:///w/a.txt",
        "curl -sD /out/x file:///w/a.txt",
        "curl -sO https://example.com/config",
        "curl -s -w '%output{/out/x}' file:///w/a.txt",
        "wget -q -o /out/log http://example.com/",
        "wget -q http://example.com/config",
        "wget -e output_document=/out/x http://example.com/",
        "tar -xf t.tar",
        "tar xf t.tar -C sub",
        "tar -cf x.tar a --checkpoint=1 --checkpoint-action=exec=sh",
        "tar -cf x.tar -I 'sh -c x' a",
        "tar cIf 'sh -c x' x.tar a",
        "tar -cf host:/x.tar a",
        "tar -czf x.tar.gz --remove-files a",
        "sed -n 's/d/D/w/out/x' a.txt",
        "sed -n '1w/out/x' a.txt",
        "sed -n 's/d/D/gw /out/x' a.txt",
        "sed 's/.*/touch x/ge' a.txt",
        "sed -ne '1e touch x' a.txt",
        "sed -f s.sed a.txt",
        "printf 'touch /out/x\\n' > s.sh; BASH_ENV=s.sh bash -c true",
        "PATH=.:$PATH ls",
        "export PATH=bin:$PATH; ls",
        "TAR_OPTIONS=--checkpoint-action=exec=sh tar -cf x.tar a",
        "LD_PRELOAD=./x.so cat a.txt",
        "HOME=/out cp a.txt ~/x",
        "export GIT_TRACE=/out/x; git status",
        "PS4='$(touch /out/x)' bash -xc true",
        "declare -x BASH_ENV=s.sh; bash -c true",
        "/usr/bin/../../w/ls",
        "x='a[%(touch /out/x)]'; x=${x/\\%/\\$}; echo $((x))",
        "x=$(cat f); [[ $x -eq 1 ]]",
        "x=$(cat f); echo ${a[$x]}",
        "let y=x+1",
        "cd -P lnk/.. && touch out/x",
        "set -P; cd lnk/.. && touch out/x",
        "set -o physical; cd lnk/..",
        "shopt -s cdable_vars; x=/out; cd x && touch y",
        "eval cd ..; touch out/x",
        "eval 'cd ..'; touch out/x",
        "command cd .. && touch out/x",
    ],
)
def test_a_program_whose_writes_the_analysis_does_not_know_is_refused(line: str) -> None:
    assert _doubt(line) is not None, line


@pytest.mark.parametrize(
    "line",
    [
        "sort a.txt | uniq -c | sort -rn | head",
        "sort -t, -k2 -n a.csv",
        "uniq -f 1 a.txt",
        "xxd a.bin | head",
        "iconv -f latin1 -t utf-8 a.txt > b.txt",
        "ls -la && cat a.txt | grep -n x | wc -l",
        'for f in *.txt; do echo "$f: $(wc -l < "$f")"; done',
        "f() { echo fn; }; f",
        "/usr/bin/git status && /bin/ls",
        "python3 --version && node -v",
        "gh pr list --state open && gh issue close 3 --comment done && gh api repos/o/r",
        "jq '.' a.json && stat -c %s a.txt && date +%Y",
        "sleep 1 & PID=$!; kill $PID; wait",
        "mkdir -p x/y && cp a.txt x/y/ && mv x/y/a.txt x/y/b.txt && rm -f x/y/b.txt",
        "timeout 5 nice -n 1 env LANG=C ls",
        "curl -sSL -o got.txt https://example.com/x && curl -s https://example.com | head",
        "curl -s -X POST -H 'Content-Type: application/json' -d '{}' https://example.com/api",
        "wget -q -O page.html https://example.com/",
        "tar -czf out.tar.gz sub && tar -tzf out.tar.gz",
        "sed -n '1,2p' a.txt && sed -i 's/e/w/g' a.txt",
        "sed -e ':a;N;$!ba;s/\\n/ /g' a.txt | sed '/^$/d'",
        "sed 's|/usr/local|/opt|g; s/[/]/-/' a.txt",
        "LANG=C sort a.txt && TZ=UTC date && NO_COLOR=1 ls",
        "DEST=sub; echo $DEST && PYTHONUNBUFFERED=1 echo x",
        "cd sub && cd .. && cd lnk/.. && set -e && set -o pipefail && shopt -s nullglob",
        "echo $((1+2)) $(($# * 2)) && [[ $# -eq 0 ]] && echo ${arr[1]}",
    ],
)
def test_the_programs_it_reads_run(line: str) -> None:
    assert _doubt(line) is None, line


@pytest.mark.parametrize(
    "line",
    [
        "git remote add evil /out",
        "git remote set-url origin /out",
        "git -C nested remote add x /out",
        "git branch -u main feature",
        "git branch --set-upstream-to=main feature",
        "git checkout -q -b t --track main",
        "git push -u origin main",
        "git sparse-checkout set sub",
        "git checkout-index --prefix=/out/ a.txt",
        "git grep -O'touch /out/x' dirty",
        "git grep --open-files-in-pager=sh dirty",
        "GIT_TRACE=/out/x git status",
        "GIT_TRACE2_EVENT=/out/x git status",
        "git credential-store --file=/out/x store",
        "git rev-parse HEAD | git pack-objects -q /out/po",
        "git fast-export --export-marks=/out/m main",
        "git st",
        "git worktree lock x",
    ],
)
def test_git_that_writes_where_the_analysis_does_not_read_is_refused(line: str) -> None:
    assert _doubt(line) is not None, line


@pytest.mark.parametrize(
    "line",
    [
        "git status && git log --oneline -5 && git diff --stat",
        "git add -A && git commit -qm x && git push origin main",
        "git checkout -q -b fix/x && git switch -q -c y && git branch --list",
        "git remote -v && git remote get-url origin && git remote",
        "git worktree list && git stash -q && git stash pop -q",
        "git fetch origin && git merge --ff-only origin/main && git grep -n x",
        "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z git commit -qm x --allow-empty",
    ],
)
def test_the_git_it_reads_runs(line: str) -> None:
    assert _doubt(line) is None, line


@pytest.mark.parametrize(
    ("line", "outside"),
    [
        ("git --git-dir=/elsewhere/.git tag x main", True),
        ("cd /elsewhere && git tag x main", True),
        ("git -C .. status", True),
        ("git --work-tree=../other checkout -- a", True),
        ("git -C sub status && cd sub && git log", False),
        ("git status", False),
    ],
)
def test_git_working_outside_the_roots_is_refused(tmp_path: Path, line: str, outside: bool) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    context = PathContext(cwd=str(ws), home=str(tmp_path / "home"))
    policy = Policy(preset="workspace", workspace_root=str(ws))
    surface = analysed_bash_surface(line)
    assert (git_outside(surface.git_dirs, context, policy) is not None) == outside, line


@pytest.mark.parametrize(
    ("line", "through"),
    [
        ("ln -s /out esc; touch esc/x", True),
        ("ln -s .git/config c; echo x >> c", True),
        ("mv lnk d && touch d/x", True),
        ("mkdir -p s d && ln -s /out/v d/v && cp -r s/. d/", True),
        ("cp -a lnk copy && touch copy/x", True),
        ("git checkout -q feature && echo x > esc/f", True),
        ("cp a.txt out-link/", True),
        ("cp -r sub/. deep/", True),
        ("cp a.txt m1 && mv m1 m2", False),
        ("ln -sfn a.txt current.txt && readlink current.txt", False),
        ("mkdir -p x/y && ln -s ../a.txt x/y/a && cat x/y/a", False),
        ("git checkout -q -b topic && echo x > notes.md", False),
        ("cp a.txt sub/ && cp -r sub copy", False),
    ],
)
def test_a_write_through_a_link_the_line_or_the_folder_holds_is_refused(
    tmp_path: Path, line: str, through: bool
) -> None:
    ws, out = tmp_path / "ws", tmp_path / "out"
    for folder in (ws / "sub", ws / "out-link", ws / "deep" / "inner", out):
        folder.mkdir(parents=True, exist_ok=True)
    (ws / "a.txt").write_text("a\n")
    (ws / "lnk").symlink_to(out)
    (ws / "out-link" / "a.txt").symlink_to(out / "victim.txt")
    (ws / "deep" / "inner" / "config").symlink_to(ws / ".git" / "config")
    context = PathContext(cwd=str(ws), home=str(tmp_path / "home"))
    policy = Policy(preset="workspace", workspace_root=str(ws))
    surface = analysed_bash_surface(line.replace("/out", str(out)))
    resolved = resolve_all(surface, context)
    found = written_through_links(surface, resolved, context, policy)
    assert (found is not None) == through, (line, found)


@pytest.mark.parametrize(
    ("line", "nothing"),
    [
        ("ls -la && cat a.txt | sort | uniq -c", True),
        ("grep -rn x . && echo done", True),
        ("uniq /dev/null notes.txt", False),
        ("sort -o notes.txt /dev/null", False),
        ("make clean", False),
        ("npm test", False),
        ("./run.sh", False),
        ("git status", False),
    ],
)
def test_a_line_goes_without_a_snapshot_only_when_it_runs_what_the_analysis_reads(
    line: str, nothing: bool
) -> None:
    # The snapshot is what brings back work such a line destroys, on every route.
    surface = extract_surface("Bash", {"command": line})
    assert changes_nothing(line, surface.programs) is nothing, line
