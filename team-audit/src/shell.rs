//! What a shell command line may do to tmux: a small POSIX-shell lexer and an allowlist
//! classifier for `team-audit hook`.
//!
//! It is not a shell. It splits a command line into simple commands (at `;`, `&`, `|`, `&&`,
//! `||`, newlines and parentheses), honours quotes, backslashes, `$'...'`, here-documents and
//! here-strings, and splits the contents of `$(...)`, backquotes, `<(...)` and `${...}` too
//! (a shell runs them). A word that holds an expansion (`$x`, `$(...)`, a glob, a brace) is
//! *dynamic*: its value is only known when the shell runs.
//!
//! Then every simple command is classified ([`analyze`]). Anything that may reach tmux becomes
//! a [`Finding`]:
//! - read-only tmux commands ([`Check::ReadOnly`]);
//! - `kill-pane` / `respawn-pane -k` in *form (b)*: `tmux -S <absolute socket>` as the whole
//!   command line (one simple command, command word `tmux` or the real tmux's path), every
//!   `-t` a `%N`, nothing else ([`Check::NeedsProof`]: allowed only once the caller proves the
//!   socket and every target a live team member on it);
//! - everything else ([`Check::Deny`], with the reason): every other tmux verb (resolved as
//!   tmux resolves it: aliases, unique prefixes, ambiguous prefixes), tmux commands inside
//!   tmux, a command name computed at run time, shells reading commands from stdin, an
//!   interpreter whose code mentions tmux, programs that run a command given to them in a
//!   word mentioning tmux, and anything the lexer cannot see through.
//!
//! Three line-wide rules follow: `tmux` anywhere in the normalised text outside the words of
//! a top-level tmux command is a denial (data a program could run), and so is a glob or brace
//! that can expand to it (`t?ux`, `t[m]ux`, `t{m,}ux`, `/tmp/t?ux-0/*`; not `*` or `*.rs`:
//! [`spells_tmux_by_glob`]); constructs that run code
//! the guard cannot read (arithmetic on variables, `trap`, prompt variables, `sed e`, `git -c`,
//! program hooks, a file written and run in the same line, a program that loads code from the
//! current directory in a line that writes a file the guard cannot read) are denials; and a
//! kill that is not the whole line is a denial. Commands that neither are tmux nor name it nor run hidden code
//! (`cargo test`, `grep -rn pane src/`) are no finding at all.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **The hook's guard is an allowlist over a parse, not a denylist over text** (issue 12).
//!   `shell.rs` lexes the line (quotes, `$'...'`, here-documents and here-strings,
//!   substitutions, process substitution) and classifies every simple command: tmux itself
//!   (verbs resolved like tmux's `cmd_find`, from its `cmd_table`: an exact alias wins, a prefix
//!   of several commands is ambiguous and denied), wrappers, shells (`-c` parsed again, stdin
//!   denied unless it is a here-document), interpreters (denied when their code mentions tmux,
//!   a tmux verb or a process call), programs that never run their arguments (`echo`, `grep`,
//!   `cat`, `git commit`, `cargo` without `--config` ...: a mention of tmux is data), and any
//!   other program (looked into for a tmux word, a tmux verb, or a command string naming tmux).
//!   Left open by the issue and decided here: (1) form (b) must be a *top-level* command: inside
//!   `sh -c`, `eval`, `$(...)`, `find -exec` or a here-document it is denied; (2) any `cd`,
//!   `unset`, `export`, `alias`, `source`, function definition or `TMUX*`/`PATH`/`LD_*`
//!   assignment anywhere in the line denies every kill in it, not only one that follows;
//!   (3) a command name only known at run time (`$t`, `$(...)`, a glob) is denied even when the
//!   line never mentions tmux; (4) `respawn-pane -k` passes only with `-t %N` and nothing else
//!   (no `-c`/`-e`/command); (5) read-only commands are the issue's list plus the `list-*`
//!   aliases and `show-window-options`; a `#(...)`, `#{E:}` or `#{T:}` format denies them;
//!   (6) an allowed call prints nothing (never `"allow"`, which would skip the host's permission
//!   prompt); a denial prints the JSON decision *and* exits 2, `--ask` prints `"ask"` and exits
//!   0; (7) `PostToolUse` pairs by `owner_evidence.tool_use_id` + caller `hook:<session>`,
//!   skips `denied` intents and intents already paired, and its stage is `failed` when the tool
//!   response says `interrupted`, `is_error` or a non-zero `exit_code`; (8) the payload's `cwd`
//!   never becomes a directory: the default log is used only when `<cwd>/.team` exists, and in
//!   `--guard` a missing or non-directory `cwd` denies the call (any call, since the workspace to
//!   prove against is unknown). Files on disk (`bash x.sh`) are not read: in a line that
//!   mentions tmux they are denied, elsewhere not seen.
//!
//! - **The guard after the black-box attack (issue 12, second round)**: four rules on top of the
//!   parse, each closing a class, not a line. (1) A kill is the *whole* line: exactly one
//!   top-level simple command whose source span is the trimmed line and holds no separator,
//!   substitution, redirection or comment (`plain_span`), whose command word is `tmux` or the
//!   canonical path of the tmux the hook finds (`MembershipOracle::tmux_bin`); wrappers
//!   (`nohup`, `timeout`, ...) no longer keep form (b). At check time `-S` must be a socket, no
//!   symlink on the way, owned by the user (`oracle::check_socket`; uid from `/proc/self`, no new
//!   dependency), before membership is asked. (2) `tmux` as data: the raw line minus the spans of
//!   top-level tmux commands run directly is normalised (`shell::normalize`) and any `tmux` left
//!   denies — heredocs, strings, comments included; read-only tmux inside `$(...)` is therefore
//!   denied too (decided: simpler than mapping nested offsets). (3) The lexer reads `(( ))`,
//!   `for (( ))`, `$(( ))`, `$[ ]` as arithmetic (only when the inner and outer parens close
//!   together, else nested subshells) and `<`/`>` inside `[[ ]]` as words; `let x<<2` stays a
//!   here-document, as bash parses it. (4) Code the guard cannot read is denied outright
//!   (`Scan::code_runner`), not only when a decoder is present: arithmetic on a *variable* (a
//!   literal `$((1+2))` passes), `${!x}`/`${x@P}`, code variables, `trap`, subscripted names, sed
//!   `e`/`w`, `git -c` except plain keys, program hooks (tar/zip/ssh/less/make/flock/watch/
//!   script/ed/vim/gdb); a file written or decoded and run in the same line is matched by
//!   basename. Payloads fail closed under `--guard` (`hook.malformed`, outcome `denied`); any
//!   payload with `tool_input.command`/`cmd` (string or argv array) is a shell call; events are
//!   matched case-insensitively and unknown ones deny. `--ask` is honoured only for Claude Code's
//!   `PreToolUse` (no `turn_id`, not `BeforeTool`); elsewhere it denies with a note.
//!
//! - **The guard after the third round (issue 12)**: (1) rule 2 is glob- and brace-aware
//!   (`shell::spells_tmux_by_glob`): every word of the normalised rest (quotes already gone, so
//!   `find -name 't?ux'` counts) is brace-expanded like bash (`{a,b}`, nested, `{a..c}`, `{1..3}`;
//!   over 256 alternatives or a 4 KiB word with `{` counts as tmux), split at `/`, and a
//!   component with `?`, `*` or `[...]` spells tmux when it matches `tmux` whole (`t?ux`, `t*`,
//!   `*x`, `????`, `[s-u]mux`), or matches a name holding `tmux` with at least one of the four
//!   letters written by the pattern itself rather than by a `*` (`t?ux-0`, `*mux*`). Decided:
//!   a component of `*`s alone never counts (`rm -rf target/*`), nor does `*.rs` (it reaches
//!   `tmux.rs` only through its `*`); `ls t*` and `ls ????` are denied. (2) A shell's script
//!   `/dev/stdin`, `/dev/fd/0` or `/proc/*/fd/0` is stdin (a here-string/-document is parsed as
//!   code, anything else denied); another descriptor, and `source` of any descriptor, is
//!   denied; `xargs` whose command is a shell, interpreter, wrapper, `SHELL_LIKE` program, `eval`,
//!   `source`, busybox or the loader (`ld.so`, `ld-linux*`) is denied. (3) Every command-bearing
//!   key (`command` and `cmd`, string or argv array) is checked, each as its own line, and any
//!   denial denies. (4) `hook::MAX_COMMAND` = 256 KiB: a longer command is denied in `--guard`
//!   (not checked or recorded without it, with a note); nesting of `(`/`{`/`[` deeper than 256
//!   is denied before lexing; at most 64 findings are kept per line (the last says how many more)
//!   so recording stays linear. Measured on a debug build: adversarial 256 KiB lines (nested
//!   `"$(`, `$((`, `"`+backquote, here-documents, globs, braces) take at most 0.9 s. (5) More
//!   command-string runners in `code_runner`: `git rebase --exec`/`-x`, `difftool -x`/`--extcmd`/
//!   `--tool`, `grep -O`/`--open-files-in-pager`, `submodule foreach`, `bisect run`; `sqlite3
//!   .shell`/`.system`/`-cmd`; `socat EXEC:`/`SYSTEM:`; `m4` (always); `dc` with `!` or `-f`;
//!   `npx`/`npm`/`pnpm`/`yarn -c`; `sort --compress-program`; `man -P`/`-H`; `at`/`batch`
//!   (always); `cargo --config` unless `net.*`.
//!
//! - **The guard after the fifth black-box round**: (1) rule 5: a line that runs a tmux command
//!   (read-only included) and `kill`, `pkill`, `killall`, `xargs`, `parallel`, `rm`, `unlink`,
//!   `shred` or `fuser`, or inline interpreter code that signals, is denied, however the output
//!   travels (a pipe, `$(...)`, a loop, a file): what tmux prints (a pane's or the server's pid,
//!   the socket path) must not reach a signal or a removal. (2) An interpreter with no program
//!   of its own (no script file, no `-c`/`-e`/`-r`/`-p`/`-m`, or `-`) reading a pipe is denied
//!   whatever the line mentions: `base64 -d | python3` is code the guard cannot read. (3) Inline
//!   code (and a here-document or here-string given to an interpreter) that reaches a name built
//!   at run time or signals is denied (`dynamic_code`: `getattr`, `__import__`, `importlib`,
//!   `__builtins__`, `eval`, `kill`, `qx`, `pty`, `ctypes`, `binding`, a pipe `open`, and
//!   `require(...)`/`import(...)` of anything but one string literal), except for sed and awk.
//!   (4) Inline interpreter code counts as a writer for rule 4, so `python3 -c "...write..."; sh
//!   y.sh` is denied. (5) `su`/`sg`/`runuser`/`ssh`/`docker`... words holding a space or `;`
//!   are parsed as command lines; `parallel` and `rush` are always denied; so is a program run
//!   by a `/proc/...` or `/dev/fd/...` path (`/proc/self/exe -c` is the shell itself); `hush` is a
//!   shell. Decided: `kill`/`pkill` of pids or patterns the line did not get from tmux stay
//!   allowed (agents stop their own dev servers): the README's limits say so.
//!
//! - **The guard after the sixth round**: rule 5 became an allowlist: besides tmux, a line
//!   that runs a tmux command may hold only `TEXT_FILTERS` (interpreters reading tmux's output,
//!   `dd of=`, `sponge`, `strace -p $(cat f)` were ways around a list of signal senders).
//!   `dynamic_code` knows more ways to reach a name at run time (`__dict__`, `vars`,
//!   `sys.modules`, `methodcaller`, `readpipe`, `IPC::Open2/3`, `&{"..."}`, `globalThis`, `new
//!   Function`, `pidfd_send_signal`, `syscall`; `importlib` alone no longer counts, only
//!   `import_module`); interpreter code in a dynamic word after `-c`/`-e`, or a here-document
//!   holding `$(...)` or a backquote, is denied; `awk ... > f`, `find -fprintf` and a compiler
//!   reading stdin count as writers for rule 4; `git filter-branch`/`--upload-pack`/
//!   `--receive-pack`/`ext::` and `strace -o '|cmd'` run command strings. Over-blocking fixed:
//!   `git config KEY VALUE` is judged by the key alone, and reading (`--get`, no value) passes;
//!   `core.autocrlf` and a few other plain `core.*` keys are plain; `xargs sed` with a plain
//!   script passes; `chmod`/`touch` are not writers. A span is plain by shell quoting rules
//!   (`-F '#{pane_id} #{pane_pid}'` is no comment).
//!
//! - **The seventh round**: `tee` left `TEXT_FILTERS` (it can write `cgroup.procs`); a span's
//!   `2>/dev/null`, `&>/dev/null`, `2>&1` is plain (`discarding_redirect`), a redirection to a
//!   file is not; `dynamic_code` knows code run from a string (`timeit`, `cProfile`, `pdb`,
//!   `runpy`, `code`, `pickle`, `inspect`, `multiprocessing`, `vm`, `Reflect`, `constructor`,
//!   `setTimeout`, `s///ee`, `${\...}`, `process[...]`) and Ruby's, PHP's, Lua's and Erlang's
//!   ways (`send`, `instance_eval`, `call_user_func`, `strrev`, `assert`, `_G`, `os[...]`,
//!   `loadstring`, `os:cmd`); gawk's `@name(...)` and `@load` count in awk programs; `erl`,
//!   `escript`, `elixir`, `iex` and `octave` are interpreters; `[[ $# -gt 0 ]]` passes (`$#`,
//!   `$?`, `$$`, `$!` hold numbers).
//!
//! - **The eighth round**: in a line that runs tmux, a redirection to anything but
//!   `/dev/null`, `/dev/stdout`, `/dev/stderr` or a descriptor is no filter, nor are `sort -o`
//!   and `uniq IN OUT` (they write files: `cgroup.procs`).
//!
//! - **The ninth round: an argument that is shell code is code**: a program may hand any
//!   argument to a shell, so every argument of a program the guard does not know (`generic`),
//!   and of `make`, is read as a command line ([`code_in_word`]: the word, what follows its
//!   first `=`, the word without a leading `!`) and denied when a command in it (or behind a
//!   wrapper in it) has a name only known at run time (`$x`, `$(...)`, a backquote), is tmux,
//!   is a shell or interpreter given code or reading a pipe, or when it holds arithmetic on a
//!   variable. Only `$` and backquotes that reach the program as text count (`Word::lit`:
//!   single-quoted, escaped, or a `$'\x24'` escape, decoded): the outer shell's own
//!   expansions are values (`-v "$PWD:/app"` passes). Decided: text that merely looks like
//!   such a command (a GraphQL `query($owner: ...)` in single quotes) is denied too. Also
//!   named: `split --filter`; `start-stop-daemon`, whose program (`--startas`, else `--exec`)
//!   is judged with the words after `--` (and `PROG /bin/sh -- -c` drops that `--` for any
//!   program); `apt`/`apt-get`/`aptitude -o` of anything but a short list of plain keys
//!   (`apt_option_is_plain`), `-c FILE` as a file run; `dpkg --pre-invoke`/`--post-invoke`/
//!   `--status-logger`; `crontab` unless `-l`/`-r`; GNU long-option prefixes for `tar`,
//!   `sort --compress-program`, `split --filter` (`long_opt`). `git grep` joins the inert git
//!   subcommands (`-O` is still denied).
//!
//! - **The tenth round: a file written unread is loaded by nothing** (rule 6). Rule 4 matched
//!   a file run by its name; a program that *loads* code finds its file itself (`python3 -m m`,
//!   `import m`, `PYTHONPATH=.` and sitecustomize.py, pytest's conftest.py, `pip install .`,
//!   `node -r`/`require`, `perl -I. -MM`/`require`/`do`, `ruby -r`, `lua -l`, package.json
//!   scripts, `build.rs`, git hooks), so those lines passed. Decided: the simple, broad rule.
//!   A file is written *unread* by a decoder or inline interpreter code (`note_decoder`), by
//!   `cp`/`mv`/`ln`/`install`/`rsync`/`scp`/`patch`/`dd of=`/`curl -o`/`wget`/`tee`/`sed -i`
//!   (`copies_unread`), by a compound command's redirection, or by a simple command's
//!   redirection unless that command is `echo` of literal words (no `\`, no `-e`), `printf`
//!   of literal words with only `%s`, `%%`, `\n`, `\t`, `\\`, `:`/`true`, or `cat` of a
//!   here-document ([`literal_output`]), and the text, alone and joined with the line's other
//!   literal text, holds no `$`, backquote or what inline code is denied for (`opaque_text`).
//!   Every simple command is a *loader* unless `loads_no_code` knows it (text and file tools,
//!   decoders, `curl`/`wget`, shell builtins, `awk` without `-f`/`@include`, `find` without
//!   `-exec`, a shell given `-c` or a here-document); wrappers are judged by the command they
//!   run. An unread write and a loader that is another command deny the line, in any order (a
//!   substitution runs first, `&` and pipes run side by side), except that a write by `tee` or
//!   a text filter reading a pipe is not held against the command just before it in that pipe
//!   (`cargo test 2>&1 | tee log`), nor a redirection against its own command (`cargo test >
//!   log`). Commands are told apart by `Scan::seq`; the lexer keeps each command's own
//!   redirections (`Simple::writes`) and those of no simple command (`orphan_writes`). The
//!   trade-off, accepted: `cp .env.example .env && npm run dev`, `pytest > log; pytest --lf`,
//!   `node -e ...; npm test` are denied (two calls pass). Left: inline code that writes a file
//!   and imports it itself (`python3 -c "open('m.py','w')...; import m"`) is one command, and
//!   is judged as inline code.
//!
//! - **The eleventh to thirteenth rounds: a program that may be tmux gets no verb at all.**
//!   A tmux verb handed to another program was denied only as a word of its own; with tmux's
//!   trailing `;` (`'kill-server;'`) or as an option's value (`--arg=kill-server`,
//!   `-akill-server`) it passed ([`tmux_word_forms`]). Then verbs the destroying check does
//!   not count (`send`, `new 'cmd'`, `run`, a `#(...)` format) reached a tmux that `find
//!   -inum N -exec {}` or `run-parts --regex` selected. Decided: a program that runs the files
//!   it finds as commands is denied whatever follows (`runs_found_files`: `find -exec {}`;
//!   `{}` given to any wrapper, `env`, `nice`, `xargs -a F`, whatever its options; `{}` given
//!   to any program but a text or file tool when the search may pick programs, by inode,
//!   regex, permissions, a name pattern that can match tmux or a start outside the project;
//!   `fd -x {}`; `run-parts` but `--test`/`--list`), and `find -exec cp {}` counts as an unread
//!   write, as do the outputs of `uniq IN OUT`, `sort -o`, `shuf -o`, `iconv -o`, `split`,
//!   `csplit`, `sdiff -o`, `objcopy` and `git apply`.
//!
//! - **The twenty-sixth round: what an interpreter runs is what the guard read.** (1) An
//!   interpreter's program path that names stdin (`python3 /dev/stdin`, `/dev/fd/0`,
//!   `/proc/*/fd/0`) is stdin, as for shells: a here-string or here-document is judged as its
//!   code, a pipe, a file or the terminal is denied; another descriptor, a terminal or any
//!   other path under `/dev` or `/proc` (but `/dev/null`), and a process substitution
//!   (`tclsh <(...)`), are denied (`program_paths`: the `-f` of awk, sed and make; for the
//!   others every word unless the program is inline or `-m`, then the words before it and
//!   option values such as `node -r /dev/stdin`). `fd_path` reads paths as the kernel does
//!   (`/dev//stdin`, `/dev/./fd/0`, `../../dev/stdin`), which closes `bash /dev//stdin` too.
//!   (2) Tcl builds command names at run time (`set c ex; append c ec; $c ...`, `[string cat
//!   ex ec]`, `ex\x65c`), so Tcl code the guard reads (a here-string or here-document given to
//!   `tclsh`, `wish` or `expect`, `expect -c`) is parsed ([`tcl_code`]) and may only call, by a
//!   plain literal name, the commands of `TCL_HARMLESS` or its own `proc`s; the scripts and
//!   expressions of `if`, `while`, `for`, `foreach`, `lmap`, `catch`, `proc` and `expr` are
//!   read too and must be literals (`expr $x`, `if $x` evaluate a value again); `{*}`,
//!   `-command` options and text the reader cannot parse are denied. Decided: an allowlist,
//!   since `rename`, `interp`, `namespace`, `info`, `apply`, `trace`, `after` and the rest are
//!   each a way to a name the guard cannot see.
//!   (3) A socket is a way to tmux: code that opens one speaks tmux's client protocol to the
//!   server's socket (its path is in `$TMUX`). `dynamic_code` counts [`socket_code`] (`sock`,
//!   `unix` anywhere, Node's `net`/`tls`/`dgram`, `createConnection`), and a program given a
//!   unix socket is denied ([`unix_socket_client`]: `curl --unix-socket`/`-K`, `nc -U`,
//!   `openssl -unix`, `socat` with any address but stdio, TCP, UDP and TLS).
//!
//! - **The twenty-seventh round: what the code the guard reads can reach by another name.**
//!   (1) Python's standard library runs command strings under names the process-call list
//!   lacked: `dynamic_code` counts `imaplib.IMAP4_stream`, `pydoc` (`pipepager`,
//!   `tempfilepager`, `pager`) and `help(...)`, `getoutput`, `mailcap`, `webbrowser` and
//!   `antigravity` (they run `$BROWSER`), `breakpoint` (`$PYTHONBREAKPOINT` names any callable),
//!   `tkinter` (Tcl's `exec`), `doctest`, `bdb`, and an *import* of `pipes`, `profile` or
//!   `trace` ([`python_imports`]: as bare words they are too common); `code_var` counts
//!   `BROWSER`, `PYTHONBREAKPOINT`, `PERL5DB`, `SYSTEMD_PAGER`, `SYSTEMD_EDITOR`, `SUDO_EDITOR`,
//!   `MAILCAPS`. Decided: every assignment of such a variable is denied, even to `cat` (as
//!   `PAGER` already was). (2) sqlite3 runs `popen` for a dot-command's file name that starts
//!   with `|` ([`sqlite_runs_command`]): any dot-command argument (quotes read as its shell
//!   reads them, [`sqlite_dot_args`]) starting with `|` is denied but for `.separator`, and so
//!   are `.once`/`.output` with an option but `--bom`, `.excel`, `.www`, any abbreviation of
//!   `.shell`/`.system` of two letters or more, and SQL's `edit(`; in arguments and, when
//!   sqlite3 reads stdin (fewer than two positional words), in a here-string or here-document;
//!   a pipe into it is denied. duckdb is judged the same. (3) A module loaded by option gives
//!   the code the guard reads functions with innocent names (`perl -MIPC::Cmd=run -e 'run(..)'`):
//!   [`unknown_module`] allows Perl's `-M`/`-m` (`-M-`, `=args`, in a cluster, after `-e`) and
//!   Ruby's `-r` only for the modules of `PERL_HARMLESS_MODULES` / `RUBY_HARMLESS_MODULES`
//!   with plain import arguments, denies `perl -d` (its debugger runs `!!cmd` from input), and,
//!   when the guard reads the program (`-e`/`-p`, a here-string), Node's `-r`/`--require`/
//!   `--import`/`--loader` and Bun's `--preload` of anything but the TypeScript loaders and
//!   `dotenv/config`. Decided: with a script file, `node -r X script.js` is not judged (the
//!   script is unread anyway, and `--import tsx` is common); Perl and Ruby are judged always.
//!
//! - **The twenty-eighth round: a call by a name built at run time, per language; programs
//!   whose options or input run a shell.** (1) Python: `dynamic_code` counts `globals` and
//!   `locals`, and [`python_star_import`] a `from M import *` of `os`, `posix`, `nt`,
//!   `subprocess`, `pty`, `pipes`, `commands`, `popen2`, `shutil`, `platform`, `asyncio`,
//!   `multiprocessing`. (2) Perl ([`perl_symbolic_call`]): `&$f`/`& $f`/`&{..}`/`goto &$f`,
//!   `->(`, `->$m`, `::{` (a stash), `can`, a glob assigned or dereferenced (`*x = "..."`,
//!   `*{"..."}`); `POSIX` left `PERL_HARMLESS_MODULES` (`POSIX::system`; it re-exports core
//!   functions): `-MPOSIX=f,..` passes only for `POSIX_HARMLESS` names. (3) Ruby
//!   ([`ruby_reflective_call`]): `method`, `instance_method`, `public_method`,
//!   `define_method`, `to_sym`, `to_proc`, `intern`, `bind_call`, `*_exec`, `module_eval`,
//!   `%I[..]`, `:"..#{..}"`. (4) [`sql_client_runs_command`]: psql's `\!`, `|cmd` after a
//!   meta-command, `program`, backquotes, `\e`; mysql's/mariadb's `\!`, `system`, `pager`,
//!   `edit`, `\P`, `--pager`, `--plugin-dir`, `--default-auth`; in any argument, a
//!   here-string, or code only known at run time; a pipe into one without `-c`/`-e` is
//!   denied. (5) [`git_program_option`]: `send-email --sendmail-cmd`/`--to-cmd`/`--cc-cmd`/
//!   `--header-cmd`, `--smtp-server` naming a path, `clone -u` (any short cluster holding
//!   `u`), `clone`/`init --template` (its hooks run), `daemon --access-hook`, `instaweb`,
//!   `web--browse`. Decided (false positives): Perl's `$a & $b`, `$f->()` on an anonymous
//!   sub, `->can`; Ruby's `.method` of any object (`req.method`); SQL holding both `\` and
//!   `|`; `cat q.sql | psql`; `perl -MPOSIX` without an import list.
//!
//! - **The twenty-ninth round: inline code that writes a file and loads code.** (1)
//!   [`self_loading_code`] applies rule 6 inside one program: code that writes a file
//!   ([`writes_file`]: `.write(`, `write_text`, `writeFile*`, `appendFile`, `copyFile`,
//!   `shutil.`, `File.write`, `file_put_contents`, `open` with a writing mode, ...) and loads
//!   code ([`loads_code`]: `sys.path`, `importlib`, `exec(`, `@INC`, `use lib`, `$:`, a worker;
//!   Python's `import` but a leading one of `PY_PLAIN_IMPORTS`; Node's `require`/`import(` but
//!   of a built-in by literal name; Perl's `require`/`do FILE`; Ruby's `require`/`load` but of
//!   `RUBY_HARMLESS_MODULES`) is denied. Decided: the list of writes is not every API (a
//!   library's writer, a stdlib module imported lazily after a write stay unseen); code that
//!   writes and imports a third-party module (`import yaml`) is denied. (2) Python's//!   lookups by a string in `dynamic_code`: `resolve_name`/`pkgutil`, `get_field`,
//!   `vformat`, `logging.config` (`dictConfig`'s `()`, `fileConfig`'s `args`), mock's
//!   `_importer`, `get_type_hints`/`ForwardRef`, `importlib` but `.metadata`/`.resources`,
//!   entry points, `copyreg`, `shelve`, `dill`, `cloudpickle`, `joblib`, `jsonpickle`, YAML's
//!   unsafe/full loaders. `"{0.x}".format(..)` stays allowed: it only builds a string.
//!   (3) Perl ([`perl_runtime_open`]): an `open` (and `IO::File`/`FileHandle` `new`,
//!   `->open`) whose two-argument spec or mode is not a literal starting with `<`, `>` or
//!   `+` without `|` (`open(F, $c)`, `open(F, pack("H*", ..))`, one-argument `open`, a mode
//!   in a variable or interpolated), and `IO::Pipe`. Decided: `open F, $file` (a read by
//!   two-argument `open` of a variable) is denied; `use open` passes.
//!   (4) `git clone -c/--config KEY=VALUE` (also `--config=`, `-cKEY=V`, a cluster `-qc`)
//!   is judged as `git -c` by `git_key_is_plain`: the clone uses it (`core.sshCommand`).
//!
//! - **The thirtieth round: an environment allowlist, extglob, history, aliases, code
//!   compiled from strings.** (1) Programs read options and commands from variables the
//!   denylist lacked (`GNUMAKEFLAGS`, `MAKEFLAGS`, `TAR_OPTIONS`, `ZIPOPT`, `RUSTC_WRAPPER`,
//!   `RUSTFLAGS=-C linker=`, `CARGO_TARGET_*_RUNNER`, `npm_config_script_shell`): a prefix
//!   assignment, `env`, `export`, `declare`/`typeset`/`local -x` may set only a name of
//!   `HARMLESS_ENV` or `LC_*`, or `MAKEFLAGS`/`RUSTFLAGS` with a plain value
//!   ([`env_value_is_plain`]: jobs, lint levels, a few `-C` keys); a shell assignment alone
//!   also passes for a name with a lower-case letter (not `npm_*`, `yarn_*`, ...)
//!   ([`env_assignment_denial`]); `set -a`/`-o allexport`, `export -f`, `declare -n` are
//!   denied ([`exported_variable_denial`]). `code_var` still names the variables that are
//!   code. Decided: `PATH`, `HOME`, `PYTEST_ADDOPTS`, `GOFLAGS` are not on the list;
//!   `OUT=$(...)` alone is denied (an inherited exported `OUT` would pass the value on).
//!   (2) The lexer reads `@(`, `+(`, `!(`, `*(`, `?(` after a word's character as an extglob
//!   group of that word (a glob, so `/usr/bin/@(t)mux` is a name only known at run time), and
//!   rule 2 takes each group as `*` ([`extglob_spells_tmux`]; a path component that is then
//!   all `*` counts). A program the guard does not know is denied any tmux command but a
//!   read-only one spelled with a `-` (`detach-client`, `new-session`, a unique prefix), not
//!   only destroying ones, and, when it is named by a path (`/opt/x/mux`), by tmux's name or
//!   alias (`send`, `run`, `if`, `popup`, `set`). Decided: by a bare name (`cargo run`, `docker
//!   run`) aliases pass. (3) `fc`, `history` with an option but `-c`/`-d`/`-w`, `set` or a
//!   shell turning on history (`-H`, `-o history`, `-o histexpand`) ([`turns_on_history`]),
//!   and `alias` with a definition are denied: the shell builds those commands from text the
//!   guard never reads as one line. (4) Inline code that compiles a string without `eval`
//!   ([`code_from_string`]: `_compile`, `require("module")`, `createRequire`, `Function(`,
//!   a bare `compile(`, `codeop`, `FunctionType`, `CodeType`, `__code__`), or whose
//!   `\xNN`/`\uNNNN`/`\u{..}`/octal escapes decode to code the guard denies
//!   ([`escaped_code`]), is denied; Perl's `use`/`no` (as a statement) and `require` of a
//!   module outside `PERL_HARMLESS_MODULES` (but `IO::File`, `IO::Handle`, `FileHandle`) is
//!   denied ([`perl_unknown_use`]). Left open: a variable assigned by `for`, `read`,
//!   `printf -v` or `${X:=v}` that is already exported; a copy of tmux under another name run
//!   by a bare name with an alias (`mux send`); Python's and Node's imports have no
//!   allowlist.
//!
//! - **The thirty-fourth round: git's `--output`, `rg --pre`, options through xargs.** A
//!   read-only git subcommand given a run-time `--output=x.sh` wrote a script the line then
//!   ran (also with a literal `--output` and `--format='%x74mux ...'`); `rg --pre=sh` ran a
//!   file; `--pre=sh` and `--compress-program=sh` reached `rg` and `sort` as words xargs read.
//!   No git subcommand takes a run-time option, git's `--output` is an unread write
//!   (`copies_unread`), `rg --pre` runs a program, and xargs runs only a short list of
//!   programs none of whose options runs one.
//! - **The thirty-fifth round: globs in the line's case, what an unknown program may run,
//!   run-time program text, kill operands.** (1) Rule 2 lower-cased the line first, so
//!   `t[Z-n]ux` read as the empty `[z-n]` (bash's `Z`..`n` holds `m`); globs are judged in
//!   the line's own case ([`normalize_cased`]) and brackets conservatively
//!   ([`class_matches`]: a range whose ends differ in case or are no letters or digits may
//!   match anything; a negated bracket matches unless surely not); `glob_matches` (find's
//!   names, pkill's regexes) reads brackets the same way, and a regex escape (`t\wux`) is any
//!   character. (2) The loader (`ld.so`, `ld-linux*`, `ld64.so*`), `choom`, `luit`,
//!   `heaptrack`, `memusage` and more are [`RUNNERS`]; `lli`, `jrunscript`, `java`, `cpan`,
//!   `gdbtui` and more are [`INTERPRETERS`]. The general rule (`Scan::generic`): an argument
//!   of an unknown program that names a shell, an interpreter or tmux is judged as that
//!   command *with the program's own input* (`| x /usr/bin/python3` reads the pipe), and a
//!   glob or brace that may name any program that runs code or arguments
//!   ([`glob_program_names`]: `/usr/bin/das?`, `/usr/bin/python3*`, with any version
//!   suffix) is judged as each name it may match; a component of `*`s alone names none (`tar
//!   czf x.tgz *`). (3) A here-string or unquoted here-document holding a run-time value (`sh
//!   <<< ": $(...)"`) is text the guard cannot see: the command reading it is judged as
//!   reading a pipe (`Lexed::expanded`); a quoted here-document is still read as code.
//!   (4) An interpreter's program holding a run-time value is denied ([`runtime_program`]):
//!   awk's program word, `-f`, `-e`, `--source`; sed's script; an option with run-time code
//!   attached (`-c"$x"`); `php -B`/`-R`/`-E`/`-F`. (5) `kill` takes only literal pids, jobs,
//!   `$!` and `$$` ([`kill_denial`]); `pkill`/`killall` selecting by parent, user, group,
//!   terminal, session, pid file or an inverted match ([`selects_beyond_names`]), `skill`,
//!   `snice`, `slay` and `xargs kill` are denied. Decided: `kill $(lsof -t -i:3000)`, `kill
//!   $PID` and `pgrep x | xargs kill` are denied (a run-time pid may be `-1`); use `pkill -f
//!   PATTERN` or a literal pid. Left open: a copy or link of a shell under another name run
//!   by an unknown program (`x ./a`), as for tmux.
//! - **The thirty-sixth round: what bash evaluates where the guard saw a value; signals by
//!   other roads.** (1) A substring's offset and length are arithmetic (`x='a[$(...)]'; echo
//!   ${s:x}` ran the substitution): [`substring_part`] finds them in any `${...}`, and
//!   anything but digits, spaces, `:` and operators there is denied, as a name in `$((...))`
//!   is; an unquoted here-document's `$((...))`, `$[...]` and `${...}` are judged the same
//!   ([`body_expansions`]). Decided: no proof that a name holds a plain number (`n=3; echo
//!   ${s:0:n}` is denied, as `$((n))` was). (2) A builtin that takes a variable name
//!   ([`name_operand_denial`]: `read`, `printf -v`, `wait -p`, `mapfile`, `test`/`[ -v`,
//!   `declare` and kin, `unset`, `getopts`) takes only a literal identifier, and no run-time
//!   word where bash's option parser may read it as an option (`printf "$fmt"`, `wait
//!   "$pid"`, `[ "$op" "$y" ]`, an unquoted `[ $x ]`, which may split): the value may be
//!   `-va[$(...)]`. (3) Bash joins a line of an unquoted here-document that ends in an odd
//!   run of backslashes with the next before comparing it with the delimiter (`EO\⏎F` ends
//!   the document, and the next line runs); dash compares each line as written.
//!   [`heredoc_body`] reads the body as bash does, and a document whose end the joining
//!   moves is denied. Decided: exact joining, not a denial of every trailing backslash
//!   (`cat <<EOF` of a script with `\` continuations passes when both readings agree).
//!   (4) A pid is `0` or 1..=[`PID_MAX_LIMIT`] without a leading zero ([`pid_in_range`]:
//!   util-linux `kill` read 4294967295 as -1); `fuser -k` in any spelling
//!   ([`fuser_kills`]), `loginctl` and `systemctl` but their read-only verbs (and
//!   `daemon-reload`, `reset-failed`, `enable`/`disable` without `--now`), D-Bus method
//!   calls (`busctl`/`gdbus`/`varlinkctl call`, `dbus-send`, `qdbus` with a method)
//!   ([`manager_signal_denial`]) and `start-stop-daemon --stop` are denied. Left open: a
//!   process attached by a literal pid (`strace -p N -e inject=...`), as a literal `kill N`.
//! - **The thirty-seventh round: where bash's words end; kernel control files.** (1) Only
//!   a space, a tab and a newline separate words: a carriage return is a word character
//!   (`true\r#` is one word, so `#` starts no comment there). (2) A compound assignment
//!   (`a=(...)`, `a+=(...)`, `a[1]=(...)`, also after `declare`/`local`) is one word and goes
//!   on after its `)` (`a=(x)#` is no comment; after a subshell's `)` bash does start one);
//!   its words are still read as a command line. (3) The end of `$(...)`, `<(...)`, `>(...)`
//!   and of a compound assignment is found as bash finds it ([`close_group`]: quotes,
//!   comments, here-documents, nested substitutions, `case ... in pat) ...;; esac`), not by
//!   counting parens; an end it cannot find denies the line (fail closed). (4) A write to a
//!   kernel control file signals or freezes tmux without naming it (`echo i >
//!   /proc/sysrq-trigger`, `cgroup.kill`, `/proc/PID/mem`): a redirection (now also `>&
//!   file`), a `tee`/`truncate` operand, any `cp`/`mv`/`ln`/`install`/`rsync`/`scp`
//!   operand, `dd of=`, the files of `sed -i`/`perl -i` or another writer's `-o`/`--output`
//!   are denied when the path has a `proc` or `sys` component or a [`KERNEL_CONTROL_FILES`]
//!   name, or ([`kernel_write_target`]) is only known at run time (`"$d/x"`, `$(...)`, a
//!   glob or brace; not `$HOME`, `$PWD`, `$$`), and for the copiers only at the destination.
//!   A line naming `sysrq-trigger`, `cgroup.kill`, `cgroup.freeze`, `cgroup.procs`,
//!   `cgroup.threads` or `freezer.state` anywhere is denied (inline code). Decided: `tee
//!   "$f"`, `> "$OUT"` and `cp /proc/cpuinfo x` are denied; reads of /proc and /sys pass.
//! - **The thirty-eighth round: the regex of `[[ =~ ]]`; here-documents ending at `)`.**
//!   (1) After an unquoted `=~` inside `[[ ... ]]` (from any unquoted `[[` word to the next
//!   `]]` word) the regex is read as bash reads it: one word in which `(` and `|` are word
//!   characters, parentheses nest and hold blanks, `;`, `&`, `<`, `>` and `#`, and only a
//!   blank outside them ends it (`[[ x =~ (a)# ]] ; cmd` runs `cmd`; the `#` was read as a
//!   comment). Decided: tokenized like bash rather than failing closed on every `(`, since
//!   `[[ $v =~ ^(a|b)$ ]]` is common agent code; what stays murky fails closed: a comment
//!   inside `[[ ... ]]`, a line break inside the regex's parentheses, a regex word starting
//!   with `#` inside `$(...)`. The same reading is in [`close_group`] ([`regex_word_end`]).
//!   (2) Bash 5.2 ends a here-document inside `$(...)`, `<(...)` or `>(...)` at a line that
//!   starts with the delimiter and holds the `)` (`EOF)`, `EOF )`, `EOFz)`, `⇥EOF)` after
//!   `<<-`), warns, and runs the next line. Decided: fail closed rather than mirror that
//!   rule ([`close_group`] denies a body line, joined or as written, that starts with the
//!   delimiter and is not exactly it); the usual `git commit -m "$(cat <<'EOF' ... EOF⏎)"`
//!   passes. A subshell `( ... )` and backquotes do not end a document so (checked).
//! - **The thirty-third round: a run-time value can be an option.** `git grep "$(printf --
//!   '-O...')"`, `git rebase "$(... --exec=...)"`, `sqlite3 db "$(... .shell ...)"` and words
//!   `xargs` reads given to `git`, `find . -exec` or a runner ran tmux. Only curl, wget, jq and
//!   yq take any run-time value; git and gh take one as the text of a text option (`-m`,
//!   `--body`) or after `--`, in subcommands that run nothing (git's read-only ones take any);
//!   xargs runs only programs that treat their arguments as data (`args_are_values`, `wrapper`).
//! - **The thirty-second round: a value only known at run time, program runners, named
//!   bracket classes, group kills.** (1) A program the guard does not know (`generic`) given
//!   a word whose value is only known at run time (`Word::runtime`: a substitution, a
//!   parameter but `$PWD`, `$HOME`, `$#`, `$?`, `$$`, `$!`, arithmetic, an undecoded escape;
//!   not a glob or brace, which rule 2 judges) is denied: it may run that word as a command
//!   (`prlimit $(printf /usr/bin/t%sx mu) $(printf kill-%s server)`), or hand it on as a verb.
//!   Known programs pass ([`is_inert`], `kill`, and [`args_are_values`]: `curl`, `gh`,
//!   `psql`, `jq`, ..., `git` with a literal subcommand). (2) [`RUNNERS`] (`prlimit`,
//!   `unshare`, `setpriv`, `strace`, `setarch`, `chroot`, `runuser`, `nsenter`, `perf`,
//!   `valgrind`, `bwrap`, `dtach`, ...): their option syntaxes differ, so each of the first
//!   [`RUNNER_TRIES`] words that are no option is judged as the command, every word with a
//!   space as a command line, and the runner's words as any unknown program's; `capsh` and
//!   `sem` are denied, runners nested three deep too (each suffix is judged once).
//!   (3) Rule 2: a bracket holding `[:..:]`, `[=..=]` or `[.c.]` (`t[[=m=]]ux`,
//!   `[[:lower:]]mux`) may match any character
//!   ([`named_classes_marked`], [`glob_tokens`]). (4) A program given a path, a glob or a
//!   run-time word before a tmux alias (`foo /opt/x/mux send`) may run that file: the alias
//!   is denied as for a program named by a path. (5) `kill -1`, `kill` of a negative pid (a
//!   process group: the tmux server leads its own; `kill -- -N`, `kill -9 -N`) and
//!   `killall5` are denied ([`kill_denial`]); so are `pkill` and `killall -r` of a
//!   regex that may match the server's name `tmux: server` (`pkill m`, `pkill t.ux`, any
//!   repetition or alternation) and `pkill -g`/`-s` ([`signal_pattern_may_reach_tmux`]).
//!   Decided: `kill 0` (the caller's own group), `kill PID` and `pkill -f PATTERN` of a plain
//!   pattern stay allowed. Left open: `pkill -f` of a plain pattern that the tmux server's
//!   command line holds (it is the first client's: `tmux new -d 'node server.js'`); a
//!   runner's command beyond its fourth non-option word; a known program (`git`, `cargo`)
//!   configured beforehand to run a command.

use crate::oracle::Server;

/// How deep `sh -c`, `eval`, `$(...)` and command strings are followed.
const MAX_DEPTH: usize = 8;

/// What the guard must do with one finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// A read-only tmux command: allowed.
    ReadOnly,
    /// Form (b): allowed when every target is proven a member of a live team on `server`.
    NeedsProof,
    /// Denied in `--guard`, with the reason.
    Deny(String),
}

/// One thing in a command line that may reach tmux.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The tmux command (`kill-pane`, `respawn-pane -k`, `kill-server`, ...), `tmux` for a
    /// tmux invocation as a whole, or `shell` for a construct the guard cannot see through.
    pub action: String,
    /// A destructive tmux command: recorded as an intent even without `--guard`.
    pub destroying: bool,
    pub server: Server,
    /// The `-t` values, in order.
    pub targets: Vec<String>,
    /// The words of the tmux command (or of the simple command, for `shell`).
    pub argv: Vec<String>,
    pub check: Check,
}

impl Finding {
    fn deny(action: &str, argv: Vec<String>, why: String) -> Finding {
        Finding {
            action: action.to_string(),
            destroying: false,
            server: Server::Default,
            targets: vec![],
            argv,
            check: Check::Deny(why),
        }
    }
}

/// Finds everything in `src` that may reach tmux. `tmux_bin` is the absolute path of the
/// real tmux binary (the only path, besides the word `tmux`, accepted as tmux's command
/// word). Never panics.
pub fn analyze(src: &str, tmux_bin: Option<&std::path::Path>) -> Vec<Finding> {
    if let Some(depth) = too_deep(src) {
        return vec![Finding::deny(
            "shell",
            vec![],
            format!(
                "parentheses, braces or brackets nested {depth} deep (more than \
                 {MAX_NESTING}): too deep to be checked"
            ),
        )];
    }
    let mut sc = Scan {
        tmux_bin: tmux_bin.map(|p| p.display().to_string()),
        ..Scan::default()
    };
    sc.line(src, Ctx::default());
    if let Some(change) = sc.env_change.clone() {
        for f in &mut sc.findings {
            if matches!(f.check, Check::NeedsProof | Check::ReadOnly) {
                f.check = Check::Deny(format!(
                    "the same command line {change}, which can change which server, pane or \
                     binary tmux reaches; run the tmux command as a line of its own"
                ));
            }
        }
    }
    // Rule 1: a kill is the whole command line, exactly one simple command.
    let whole = sc.top_single.filter(|sp| {
        sc.exempt.contains(sp) && {
            let t: String = sc.chars[sp.0..sp.1].iter().collect();
            t.trim() == src.trim()
        }
    });
    if whole.is_none() {
        for f in &mut sc.findings {
            if f.check == Check::NeedsProof {
                f.check = Check::Deny(format!(
                    "{} must be the whole command line: exactly one `tmux -S <socket> {} -t %N` \
                     with nothing before or after it (no `;`, `&&`, `||`, `|`, `&`, newline, \
                     subshell, function, redirection, here-document or assignment)",
                    f.action, f.action
                ));
            }
        }
    }
    // Rule 2: `tmux` anywhere but in the words of a checked tmux command.
    let mut rest = String::new();
    for (k, ch) in sc.chars.iter().enumerate() {
        if sc.exempt.iter().any(|(a, b)| (*a..*b).contains(&k)) {
            if !rest.ends_with(' ') {
                rest.push(' ');
            }
        } else {
            rest.push(*ch);
        }
    }
    // Globs are judged in the line's own case (`[Z-n]` is not `[z-n]`), the word in lower case.
    let cased = normalize_cased(&rest);
    let rest = cased.to_lowercase();
    if rest.contains("tmux") || spells_tmux_by_glob(&cased) {
        sc.findings.push(Finding::deny(
            "shell",
            vec![],
            "tmux appears inside data a program could run (a string, a here-document, a \
             comment, a file name or an argument, once quotes and escapes are removed, or a \
             glob or brace such as `t?ux`, `t[m]ux`, `t{m,}ux` that can expand to it); under \
             --guard a line may name tmux only as the command word of a read-only tmux command \
             or of a proven kill (use --ask to let a person decide)"
                .into(),
        ));
    }
    // Rule 5: what a tmux command prints (a server's or a pane's pid, a socket path) must not
    // reach anything that could signal or remove, whatever carries it (a pipe, a variable, a
    // loop, a file): besides tmux, a line that runs tmux holds text filters only.
    if sc.runs_tmux
        && let Some(what) = sc.not_a_filter.clone()
    {
        sc.findings.push(Finding::deny(
            "shell",
            vec![],
            format!(
                "the line runs tmux and {what}: besides tmux, a line that runs it may hold only \
                 text filters (grep, head, sort, jq, ...), so that nothing acts on what tmux \
                 printed (a server's or a pane's pid, a socket); run the tmux command as a line \
                 of its own"
            ),
        ));
    }
    // Rule 4: a file written (or data decoded) and a file run in the same line.
    let written_names: std::collections::HashSet<&str> =
        sc.written.iter().map(|w| basename(w)).collect();
    let written = |path: &str| written_names.contains(basename(path));
    let hit = sc
        .runs
        .iter()
        .find(|(path, _)| written(path))
        .map(|(p, r)| format!("writes `{p}` and {r}"))
        .or_else(|| {
            let d = sc.decoder.as_ref()?;
            let (_, r) = sc.runs.first()?;
            Some(format!("{d} and {r}"))
        });
    if let Some(what) = hit {
        sc.findings.push(Finding::deny(
            "shell",
            vec![],
            format!(
                "the line {what}: it may run code written or decoded in the same line, which the \
                 guard cannot read"
            ),
        ));
    }
    // Rule 6: in a line that writes a file with content the guard cannot read, no other
    // command may load code from the current directory or a path (`python3 -m m`, `pytest`'s
    // conftest.py, `node -r`, `perl -I. -MM`, a Makefile, package.json scripts, git hooks):
    // which file a program loads is not in the line. In any order, but for a write that only
    // saves the output of the command just before it in a pipe.
    let pair = sc.unreadable.iter().find_map(|(at, what, origin)| {
        let (_, how) = sc
            .loaders
            .iter()
            .find(|(s, _)| s != at && Some(*s) != *origin)?;
        Some((what, how))
    });
    if let Some((what, how)) = pair {
        sc.findings.push(Finding::deny(
            "shell",
            vec![],
            format!(
                "the line {what}, content the guard cannot read, and {how}, which can \
                 load code from the current directory or a path (a module or `-m`, `-r`, `-I`, \
                 `-M`, `PYTHONPATH`, sitecustomize.py, conftest.py, setup.py, package.json \
                 scripts, a Makefile, a build script, git hooks); a line that writes such a \
                 file may hold, besides the command whose output it saves, only commands that \
                 load no code (grep, cat, ls, ...)"
            ),
        ));
    }
    // A line with very many findings is denied anyway: the hook lists (and records) only the
    // first ones, so that checking and recording stay linear in the line's length.
    if sc.findings.len() > MAX_FINDINGS {
        let more = sc.findings.len() - (MAX_FINDINGS - 1);
        sc.findings.truncate(MAX_FINDINGS - 1);
        sc.findings.push(Finding::deny(
            "shell",
            vec![],
            format!("and {more} more things in the line that may reach tmux (not listed)"),
        ));
    }
    sc.findings
}

/// Deepest nesting of `(`, `{`, `[` checked: the lexer's bracket matching is linear per
/// level, so checking stays near-linear in the line's length.
const MAX_NESTING: usize = 256;

/// The nesting depth of `(`, `{`, `[` outside quotes, if more than [`MAX_NESTING`].
fn too_deep(src: &str) -> Option<usize> {
    let c: Vec<char> = src.chars().collect();
    let (mut depth, mut max, mut j) = (0usize, 0usize, 0);
    while j < c.len() {
        match c[j] {
            '(' | '{' | '[' => {
                depth += 1;
                max = max.max(depth);
            }
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            '\\' => j += 1,
            '\'' => {
                j += 1;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    (max > MAX_NESTING).then_some(max)
}

/// Most findings reported for one line.
const MAX_FINDINGS: usize = 64;

/// Most brace alternatives expanded per word; more is taken as spelling tmux.
const MAX_BRACE: usize = 256;
/// Longest word with a `{` that is brace-expanded; a longer one is taken as spelling tmux.
const MAX_BRACE_WORD: usize = 4096;

/// Rule 2's glob half: a word of normalised text (split at blanks and shell operators) that
/// holds `?`, `*`, `[...]` or `{a,b}` / `{a..c}` and one of whose brace expansions has a path
/// component that is [`glob_spells_tmux`].
fn spells_tmux_by_glob(text: &str) -> bool {
    let text = &named_classes_marked(text);
    extglob_spells_tmux(text)
        || text
            .split(|c: char| c.is_whitespace() || ";&|()<>=:`\"'".contains(c))
            .filter(|w| w.contains(['?', '*', '[', '{']))
            .any(|w| match expand_braces(w) {
                None => true,
                Some(alts) => alts.iter().any(|a| {
                    a.to_lowercase().contains("tmux") || a.split('/').any(glob_spells_tmux)
                }),
            })
}

/// `[:lower:]`, `[=m=]`, `[.m.]` (inside a bracket) replaced by `\u{1}`, which
/// [`glob_tokens`] reads as a bracket that may match any character; the split at `=` and `:`
/// then leaves the bracket whole.
fn named_classes_marked(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        if c[i] == '['
            && let Some(&d) = c.get(i + 1)
            && matches!(d, ':' | '=' | '.')
            && let Some(e) = (i + 2..c.len().saturating_sub(1))
                .take_while(|&k| !c[k].is_whitespace())
                .find(|&k| c[k] == d && c[k + 1] == ']')
        {
            out.push('\u{1}');
            i = e + 2;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Whether `w` holds an extglob group: `@(`, `+(`, `!(`, `*(` or `?(`.
fn has_extglob(w: &str) -> bool {
    ["@(", "+(", "!(", "*(", "?("].iter().any(|o| w.contains(o))
}

/// Rule 2 for extglob patterns (`@(t)mux`, `/usr/bin/!(a*)`): each group is taken as `*`
/// and the component judged by [`glob_spells_tmux`]; a component that is then all `*` in a
/// path (`/usr/bin/!(x)`) counts too, since it can match any program there.
fn extglob_spells_tmux(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || ";&|<>=:`\"'".contains(c))
        .filter(|w| has_extglob(w))
        .any(|w| {
            w.split('/').any(|comp| {
                if !has_extglob(comp) {
                    return false;
                }
                let out = extglob_as_star(comp);
                (w.contains('/') && out.chars().all(|x| x == '*')) || glob_spells_tmux(&out)
            })
        })
}

/// `tmux_shaped`: a pattern word (braces included) that can expand to tmux.
/// Programs that treat a file they are given as data (`find -exec grep x {} +`).
const FILE_TOOLS: &[&str] = &[
    "zcat",
    "gunzip",
    "xzcat",
    "bzcat",
    "zstdcat",
    "jq",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "cat",
    "head",
    "tail",
    "wc",
    "ls",
    "stat",
    "file",
    "rm",
    "rmdir",
    "mv",
    "cp",
    "ln",
    "chmod",
    "chown",
    "chgrp",
    "touch",
    "sed",
    "du",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "basename",
    "dirname",
    "echo",
    "printf",
    "diff",
    "cmp",
    "readlink",
    "realpath",
    "test",
    "[",
    "tar",
    "gzip",
    "xz",
    "zstd",
    "bzip2",
    "sort",
    "uniq",
    "cut",
    "strings",
    "od",
    "hexdump",
    "xxd",
    "dos2unix",
    "rustfmt",
    "gofmt",
    "black",
    "prettier",
    "clang-format",
    "shellcheck",
    "git",
];

/// Whether a `find` search (the words before its `-exec`) may select programs: a test by inode,
/// name pattern, regex, permissions, or a starting point outside the current directory.
fn find_may_select_programs(before: &[Word]) -> bool {
    let mut roots = true;
    for (i, w) in before.iter().enumerate() {
        let t = w.text.as_str();
        if roots && (t.starts_with('-') || t == "(" || t == "!") {
            roots = false;
        }
        if roots {
            if t.starts_with('/') || t.starts_with('~') || t.starts_with("..") || t.contains('$') {
                return true;
            }
            continue;
        }
        match t {
            "-inum" | "-samefile" | "-regex" | "-iregex" | "-perm" | "-executable" | "-links"
            | "-lname" | "-ilname" => return true,
            "-name" | "-iname" | "-path" | "-ipath" | "-wholename"
                if before
                    .get(i + 1)
                    .is_some_and(|p| glob_may_match_tmux(&p.text)) =>
            {
                return true;
            }
            _ => {}
        }
    }
    false
}

/// Whether a `find` name pattern can match `tmux` (as a name, or a path ending in it). An
/// unclosed bracket may match anything ([`glob_matches`]).
fn glob_may_match_tmux(pat: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    ["tmux", "/usr/bin/tmux", "/bin/tmux"].iter().any(|t| {
        let s: Vec<char> = t.chars().collect();
        glob_matches(&p, &s)
    }) || pat.contains("mux")
}

/// A program that runs its arguments as a command (`env`, `nice`, `timeout`, `xargs`, ...).
fn is_exec_wrapper(b: &str) -> bool {
    WRAPPERS.iter().any(|(x, ..)| *x == b)
        || matches!(
            b,
            "nice" | "ionice" | "nohup" | "exec" | "command" | "builtin" | "busybox" | "strace"
        )
}

/// The words of the command `find` runs for each file (`-exec`, `-execdir`, `-ok`, `-okdir`,
/// up to its `;` or `+`), and where its option starts in `args`.
fn find_exec(args: &[Word]) -> Option<(usize, &[Word])> {
    let k = args
        .iter()
        .position(|a| matches!(a.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir"))?;
    let rest = &args[k + 1..];
    let end = rest
        .iter()
        .position(|w| matches!(w.text.as_str(), ";" | "+" | "\\;"))
        .unwrap_or(rest.len());
    Some((k, &rest[..end]))
}

/// Why `base` with `args` runs files it finds as commands (see `Scan::generic`), if it does.
fn runs_found_files(base: &str, args: &[Word]) -> Option<String> {
    match base {
        "find" => {
            let (k, exec) = find_exec(args)?;
            let (cmd, rest) = exec.split_first()?;
            let given = rest.iter().any(|w| w.text.contains("{}"));
            let b = basename(&cmd.text);
            if cmd.text.contains("{}") {
                Some(format!(
                    "`find -exec {}` runs each file it finds as a command, whose name is only known at run time (it may be tmux)",
                    cmd.text
                ))
            } else if given && is_exec_wrapper(b) {
                // Which of a wrapper's words is the command cannot be told for every wrapper's
                // options (`-exec xargs -a /dev/stdin {}`): given a found file, it is denied.
                Some(format!(
                    "`find -exec {}` is given the files it finds: one of them may be tmux, run as a command",
                    cmd.text
                ))
            } else if given && !FILE_TOOLS.contains(&b) && find_may_select_programs(&args[..k]) {
                // A program that is not a known text or file tool, given the files a search
                // that may pick programs finds: it may run what it is given (`ld.so {}`).
                Some(format!(
                    "`find -exec {}` is given files a search that may select programs (tmux among them) finds",
                    cmd.text
                ))
            } else {
                None
            }
        }
        "fd" | "fdfind" => {
            let k = args
                .iter()
                .position(|a| matches!(a.text.as_str(), "-x" | "-X" | "--exec" | "--exec-batch"))?;
            let cmd = args.get(k + 1)?;
            cmd.text.contains('{').then(|| {
                format!(
                    "`{base} {} {}` runs each file it finds as a command, whose name is only known at run time (it may be tmux)",
                    args[k].text, cmd.text
                )
            })
        }
        "run-parts" => {
            let listing = args
                .iter()
                .any(|a| matches!(a.text.as_str(), "--test" | "--list"));
            (!listing).then(|| {
                "`run-parts` runs every program in a directory, whose names are only known at run time (one may be tmux)".to_string()
            })
        }
        _ => None,
    }
}

/// tmux's short aliases of commands that destroy or move panes and windows.
const TMUX_ALIASES: &[&str] = &[
    "killp", "killw", "unlinkw", "respawnp", "respawnw", "breakp", "joinp", "movep", "movew",
    "linkw", "swapp", "swapw", "splitw", "neww", "newp",
];

/// The forms in which a word given to another program may reach tmux as a command: the word
/// itself; without the `;` (or `\;`) that ends a tmux command (tmux drops it from the
/// argument); and the value of an option that carries it (`--arg=kill-server`,
/// `-akill-server`), with and without that `;`.
fn tmux_word_forms(text: &str) -> Vec<&str> {
    let value = if let Some(rest) = text.strip_prefix("--") {
        rest.split_once('=').map(|(_, v)| v)
    } else if text.starts_with('-') && text.len() > 2 {
        text.get(2..)
    } else {
        None
    };
    let mut out = Vec::new();
    for f in std::iter::once(text).chain(value) {
        out.push(f);
        out.push(
            f.trim_end_matches(';')
                .trim_end_matches('\\')
                .trim_end_matches(';'),
        );
    }
    out.retain(|f| !f.is_empty());
    out.dedup();
    out
}

#[cfg(test)]
fn tmux_shaped(w: &str) -> bool {
    spells_tmux_by_glob(w)
}

/// Bash's brace expansion of one word: `{a,b}` (nested), `{a..c}`, `{1..3}`; `${...}` and
/// braces without a comma or `..` are left as they are. `None`: more than [`MAX_BRACE`].
fn expand_braces(w: &str) -> Option<Vec<String>> {
    if w.len() > MAX_BRACE_WORD && w.contains('{') {
        return None;
    }
    let c: Vec<char> = w.chars().collect();
    // The first `{` (not `${`) whose matching `}` holds a top-level `,` or is a `..` range.
    let mut i = 0;
    while i < c.len() {
        if c[i] == '{' && (i == 0 || c[i - 1] != '$') {
            let mut depth = 0usize;
            let mut commas = Vec::new();
            let mut end = None;
            for (j, ch) in c.iter().enumerate().skip(i) {
                match ch {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(j);
                            break;
                        }
                    }
                    ',' if depth == 1 => commas.push(j),
                    _ => {}
                }
            }
            let Some(end) = end else { break };
            let pre: String = c[..i].iter().collect();
            let post: String = c[end + 1..].iter().collect();
            let body: String = c[i + 1..end].iter().collect();
            let mut alts: Vec<String> = Vec::new();
            if !commas.is_empty() {
                let mut from = i + 1;
                for k in commas.iter().copied().chain([end]) {
                    alts.push(c[from..k].iter().collect());
                    from = k + 1;
                }
            } else if let Some((a, b)) = body.split_once("..") {
                let (a, b) = (a.trim(), b.split("..").next().unwrap_or("").trim());
                let (ac, bc) = (a.chars().collect::<Vec<_>>(), b.chars().collect::<Vec<_>>());
                if let (Ok(x), Ok(y)) = (a.parse::<i64>(), b.parse::<i64>()) {
                    if x.abs_diff(y) as usize >= MAX_BRACE {
                        return None;
                    }
                    let (lo, hi) = (x.min(y), x.max(y));
                    alts = (lo..=hi).map(|v| v.to_string()).collect();
                } else if ac.len() == 1 && bc.len() == 1 {
                    let (lo, hi) = (ac[0].min(bc[0]), ac[0].max(bc[0]));
                    alts = (lo..=hi).map(String::from).collect();
                }
            }
            if alts.is_empty() {
                i += 1;
                continue;
            }
            let mut out = Vec::new();
            for a in alts {
                for e in expand_braces(&format!("{pre}{a}{post}"))? {
                    out.push(e);
                    if out.len() > MAX_BRACE {
                        return None;
                    }
                }
            }
            return Some(out);
        }
        i += 1;
    }
    Some(vec![w.to_string()])
}

/// One piece of a glob pattern.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Glob<'a> {
    Lit(char),
    Any,
    Star,
    /// `[...]`: the text between the brackets.
    Class(&'a str),
}

fn glob_tokens(p: &str) -> Vec<Glob<'_>> {
    let mut out = Vec::new();
    let mut it = p.char_indices().peekable();
    while let Some((i, ch)) = it.next() {
        match ch {
            '?' => out.push(Glob::Any),
            '*' => out.push(Glob::Star),
            '[' => {
                // `[]...]` and `[!]...]`: a leading `]` is a member.
                let body_start = i + 1;
                let rest = &p[body_start..];
                let skip = usize::from(rest.starts_with(['!', '^']));
                let skip = skip + usize::from(rest[skip..].starts_with(']'));
                // `[[:lower:]]`, `[[=m=]]`, `[[.m.]]`: a class, an equivalence class or a
                // collating symbol ends at its own `:]`, `=]` or `.]`; such a bracket may match
                // any character (locales differ), so it counts as `?`.
                let mut named = false;
                let mut k = skip;
                let found = loop {
                    let r = &rest[k..];
                    if let Some(d) = r.strip_prefix('[').and_then(|x| x.chars().next())
                        && matches!(d, ':' | '=' | '.')
                        && let Some(e) = r[2..].find(&format!("{d}]"))
                    {
                        named = true;
                        k += 2 + e + 2;
                    } else if let Some(ch) = r.chars().next() {
                        if ch == ']' {
                            break Some(k);
                        }
                        k += ch.len_utf8();
                    } else {
                        break None;
                    }
                };
                match found.map(|k| k - skip) {
                    Some(k) if named || rest[skip..skip + k].contains('\u{1}') => {
                        let end = body_start + skip + k;
                        out.push(Glob::Any);
                        while it.peek().is_some_and(|(j, _)| *j <= end) {
                            it.next();
                        }
                    }
                    Some(k) => {
                        let end = body_start + skip + k;
                        out.push(Glob::Class(&p[body_start..end]));
                        while it.peek().is_some_and(|(j, _)| *j <= end) {
                            it.next();
                        }
                    }
                    None => out.push(Glob::Lit('[')),
                }
            }
            c => out.push(Glob::Lit(c)),
        }
    }
    out
}

/// Whether a `[...]` body (without brackets) may match `ch` (a letter of a name, in lower
/// case) in some shell and locale. Conservative (the thirty-fifth round: `[Z-n]` is `Z`..`n`
/// in the C locale, `m` among them): a single member matches in either case; a range of two
/// letters of one case matches the letters between them in either case (a locale's collation
/// interleaves the cases); a range of two digits the digits between them; any other range
/// (ends that differ in case, or are no letter or digit) and a `[:class:]`, `[=c=]` or `[.c.]`
/// may match anything. A negated bracket (`[!...]`, `[^...]`) may match unless `ch` is surely
/// in it: a member equal to `ch`, or `ch` inside a range of its own case.
fn class_matches(body: &str, ch: char) -> bool {
    let (neg, body) = match body.strip_prefix(['!', '^']) {
        Some(b) => (true, b),
        None => (false, body),
    };
    let c: Vec<char> = body.chars().collect();
    // `may`: in the set in some reading; `must`: in the set in every reading.
    let (mut may, mut must) = (false, false);
    let mut k = 0;
    while k < c.len() {
        if c[k] == '['
            && let Some(&d) = c.get(k + 1)
            && matches!(d, ':' | '=' | '.')
        {
            // `[:alpha:]`, `[=m=]`, `[.m.]`: locales differ.
            may = true;
            k = (k + 2..c.len().saturating_sub(1))
                .find(|&e| c[e] == d && c[e + 1] == ']')
                .map_or(c.len(), |e| e + 2);
        } else if k + 2 < c.len() && c[k + 1] == '-' {
            let (a, b) = (c[k], c[k + 2]);
            let (lo, hi) = (a.min(b), a.max(b));
            let same_case_letters = (a.is_ascii_lowercase() && b.is_ascii_lowercase())
                || (a.is_ascii_uppercase() && b.is_ascii_uppercase());
            if same_case_letters {
                let (l, h, x) = (
                    lo.to_ascii_lowercase(),
                    hi.to_ascii_lowercase(),
                    ch.to_ascii_lowercase(),
                );
                may |= (l..=h).contains(&x);
                must |= (a..=b).contains(&ch);
            } else if a.is_ascii_digit() && b.is_ascii_digit() {
                may |= (lo..=hi).contains(&ch);
                must |= (a..=b).contains(&ch);
            } else {
                may = true;
            }
            k += 3;
        } else {
            may |= c[k].eq_ignore_ascii_case(&ch);
            must |= c[k] == ch;
            k += 1;
        }
    }
    if neg { !must } else { may }
}

/// Whether one path component (brace-free) can spell tmux when the shell or `find -name`
/// expands it. Only patterns (with `?`, `*` or `[...]`) count; a component of `*`s alone
/// never does (`ls *`, `rm -rf target/*`). Otherwise it does when it can match `tmux`
/// itself (`t?ux`, `t*`, `????`, `[s-u]mux`), or a name that holds `tmux` with at least one
/// of those four letters written by the pattern, not left to a `*` (`t?ux-0`, `*mux*`; but
/// not `*.rs`, which could match `tmux.rs` only through its `*`).
fn glob_spells_tmux(comp: &str) -> bool {
    let toks = glob_tokens(comp);
    if !toks.iter().any(|t| !matches!(t, Glob::Lit(_))) || toks.iter().all(|t| *t == Glob::Star) {
        return false;
    }
    const T: [char; 4] = ['t', 'm', 'u', 'x'];
    // The characters worth trying: the letters of tmux, and one that is none of them.
    let other =
        |t: &Glob| -> Option<char> { ('!'..='~').find(|c| !T.contains(c) && tok_matches(t, *c)) };
    // States: (token index, letters of tmux matched so far, a letter written by the
    // pattern used). Since `tmux` has no repeated letter, a mismatch goes back to 0 (or 1
    // on a `t`).
    let step = |k: usize, ch: char| -> usize {
        if k < 4 && T[k] == ch {
            k + 1
        } else if ch == 't' {
            1
        } else {
            0
        }
    };
    // `tmux` as the whole name, through wildcards alone too (`????`, `t*`, `*x`).
    if whole_match(&toks, &T) {
        return true;
    }
    let n = toks.len();
    let mut seen = vec![[[false; 2]; 5]; n + 1];
    let mut todo = vec![(0usize, 0usize, false)];
    while let Some((i, k, lit)) = todo.pop() {
        if std::mem::replace(&mut seen[i][k][usize::from(lit)], true) {
            continue;
        }
        if k == 4 && lit {
            return true;
        }
        if i == n {
            continue;
        }
        let t = &toks[i];
        let written = matches!(t, Glob::Lit(_) | Glob::Class(_));
        let mut chars: Vec<char> = T.iter().copied().filter(|c| tok_matches(t, *c)).collect();
        chars.extend(other(t));
        for ch in chars {
            let k2 = step(k, ch);
            let lit2 = match k2 {
                0 => false,
                1 => written,
                _ => lit || written,
            };
            // A `*` may take more characters; any other token takes one.
            let i2 = if *t == Glob::Star { i } else { i + 1 };
            todo.push((i2, k2, lit2));
        }
        if *t == Glob::Star {
            todo.push((i + 1, k, lit));
        }
    }
    false
}

fn tok_matches(t: &Glob, ch: char) -> bool {
    match t {
        Glob::Lit(c) => c.eq_ignore_ascii_case(&ch),
        Glob::Any | Glob::Star => true,
        Glob::Class(b) => class_matches(b, ch),
    }
}

/// Whether the pattern matches exactly `s`.
fn whole_match(toks: &[Glob], s: &[char]) -> bool {
    // Positions in `s` reachable before token i.
    let mut cur = vec![false; s.len() + 1];
    cur[0] = true;
    for t in toks {
        let mut next = vec![false; s.len() + 1];
        for p in 0..=s.len() {
            if !cur[p] {
                continue;
            }
            if *t == Glob::Star {
                for q in next.iter_mut().skip(p) {
                    *q = true;
                }
            } else if p < s.len() && tok_matches(t, s[p]) {
                next[p + 1] = true;
            }
        }
        cur = next;
    }
    cur[s.len()]
}

/// The text as a shell would see it once quotes, backslashes, escapes (`$'\x74'`, `\164`,
/// `\u0074`), empty substitutions and line continuations are gone, in lower case (rule 2
/// lower-cases [`normalize_cased`] itself).
#[cfg(test)]
fn normalize(s: &str) -> String {
    normalize_cased(s).to_lowercase()
}

/// The text as a shell would see it once quotes, backslashes, escapes (`$'\x74'`, `\164`,
/// `\u0074`), empty substitutions and line continuations are gone, in the line's own case:
/// globs are judged in it (`[Z-n]` holds `m`).
fn normalize_cased(s: &str) -> String {
    let c: Vec<char> = s.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let hex = |a: usize, max: usize, radix: u32| -> (Option<char>, usize) {
        let mut j = a;
        let mut v: u32 = 0;
        while j < c.len() && j - a < max && c[j].is_digit(radix) {
            v = v * radix + c[j].to_digit(radix).unwrap_or(0);
            j += 1;
        }
        if j == a {
            (None, a)
        } else {
            (char::from_u32(v), j)
        }
    };
    while i < c.len() {
        match c[i] {
            '\\' if i + 1 < c.len() => {
                let (ch, next) = match c[i + 1] {
                    'x' => hex(i + 2, 2, 16),
                    'u' => hex(i + 2, 4, 16),
                    'U' => hex(i + 2, 8, 16),
                    '0'..='7' => hex(i + 1, 4, 8),
                    '\n' => (None, i + 2),
                    other => (Some(other), i + 2),
                };
                if let Some(ch) = ch {
                    out.push(ch);
                }
                i = next.max(i + 2);
            }
            '\\' | '\'' | '"' => i += 1,
            '$' if matches!(c.get(i + 1), Some('\'') | Some('"')) => i += 1,
            '$' if c.get(i + 1) == Some(&'(') && c.get(i + 2) == Some(&')') => i += 3,
            '$' if c.get(i + 1) == Some(&'{') && c.get(i + 2) == Some(&'}') => i += 3,
            '`' if c.get(i + 1) == Some(&'`') => i += 2,
            '$' if matches!(c.get(i + 1), Some('@') | Some('*')) => i += 2,
            ch => {
                out.push(ch);
                i += 1;
            }
        }
    }
    // Escapes may have made new quotes or backslashes.
    out.chars()
        .filter(|c| !matches!(c, '\\' | '\'' | '"'))
        .collect::<String>()
}

// ---------------------------------------------------------------------------------------------
// Lexer

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Word {
    text: String,
    /// Holds an expansion: the value is only known when the shell runs.
    dynamic: bool,
    /// Holds a `$` or a backquote the shell passes on as text (quoted or escaped): the
    /// program receives it, and may give it to a shell of its own.
    lit: bool,
    /// Holds a `$'...'` escape the guard does not decode (`\x24`, `\044`, `\u0024`).
    undecoded: bool,
    /// Holds an expansion whose value may be any text (a substitution, a parameter but the
    /// numbers `$#`, `$?`, `$$`, `$!` and the cwd and home `$PWD`, `$HOME`, arithmetic, an
    /// undecoded escape); a glob or brace alone is not one (rule 2 judges those).
    runtime: bool,
    /// Holds a quote or a backslash (a quoted here-document delimiter: the body is literal).
    quoted: bool,
    /// Holds an unquoted expansion or glob: the shell may split its value into several words
    /// (`$x` may become `-v a[...]`).
    split: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Input {
    /// The shell's own stdin.
    Inherit,
    /// The output of the previous command of a pipeline.
    Pipe,
    /// A file (`< file`).
    File,
    /// A here-document or here-string, by index into [`Lexed::texts`].
    Text(usize),
}

#[derive(Debug, Clone)]
struct Simple {
    words: Vec<Word>,
    input: Input,
    /// Where the command stands in the source (char indices, end exclusive).
    span: (usize, usize),
    /// Targets of its own output redirections (what it prints lands there).
    writes: Vec<String>,
}

#[derive(Debug, Default)]
struct Lexed {
    cmds: Vec<Simple>,
    /// Command lines a shell runs inside words: `$(...)`, backquotes, `<(...)`, `${...}`.
    subs: Vec<String>,
    /// Here-document and here-string bodies.
    texts: Vec<String>,
    /// Which of `texts` hold a value only known at run time (a here-string with an expansion,
    /// an unquoted here-document with `$...` or a backquote): the program reading it reads
    /// text the guard cannot see, as from a pipe.
    expanded: Vec<usize>,
    /// Why the lexer could not see through the line, if it could not.
    opaque: Option<String>,
    /// Arithmetic expressions: `((...))`, `for ((...))`, `$((...))`, `$[...]`, subscripts.
    arith: Vec<String>,
    /// Expansions that evaluate a value as code: `${!x}`, `${x@P}`.
    evals: Vec<String>,
    /// Substring expansions whose offset or length is arithmetic on more than literal
    /// numbers (`${s:x}`, `${s:0:x}`): a name there is evaluated as `$((x))` evaluates it.
    substrings: Vec<String>,
    /// Targets of output redirections (`> file`, `>> file`, `&> file`).
    writes: Vec<String>,
    /// Redirection targets of no simple command (`(...) > f`), with the index of the command
    /// that follows them.
    orphan_writes: Vec<(usize, String)>,
}

#[allow(unused_assignments)] // the last `finish_cmd!` resets state no one reads
fn lex(src: &str) -> Lexed {
    let c: Vec<char> = src.chars().collect();
    let n = c.len();
    let mut out = Lexed::default();
    let mut i = 0;
    let mut words: Vec<Word> = Vec::new();
    let mut word: Option<Word> = None;
    let mut input = Input::Inherit;
    // What the next finished word is: a redirection target to drop, a here-string, or a
    // here-document delimiter.
    #[derive(PartialEq)]
    enum Pending {
        None,
        Target,
        WriteTarget,
        DupTarget,
        HereString,
        Heredoc(bool),
    }
    let mut pending = Pending::None;
    // Here-documents whose bodies start after the next newline: (delimiter, strip tabs, slot,
    // quoted delimiter).
    let mut heredocs: Vec<(String, bool, usize, bool)> = Vec::new();
    // Where the command being read started.
    let mut cmd_start: Option<usize> = None;
    // The first of `out.writes` that belongs to the command being read.
    let mut cmd_writes = 0usize;
    // The thirty-eighth round: inside `[[ ... ]]` (from an unquoted `[[` word to an unquoted
    // `]]` word), and the paren depth of the regex word after `=~` being read.
    let mut dbracket = false;
    let mut re_depth = 0usize;

    let text = |a: usize, b: usize| -> String { c[a.min(n)..b.min(n)].iter().collect() };

    macro_rules! finish_word {
        () => {
            if let Some(w) = word.take() {
                match std::mem::replace(&mut pending, Pending::None) {
                    Pending::None => {
                        if !w.quoted && !w.dynamic && w.text == "[[" {
                            dbracket = true;
                        } else if !w.quoted && w.text == "]]" {
                            dbracket = false;
                        }
                        words.push(w)
                    }
                    Pending::Target => {}
                    Pending::WriteTarget => out.writes.push(w.text),
                    Pending::DupTarget => {
                        if !w.text.chars().all(|d| d.is_ascii_digit() || d == '-') {
                            out.writes.push(w.text);
                        }
                    }
                    Pending::HereString => {
                        out.texts.push(w.text);
                        if w.runtime {
                            out.expanded.push(out.texts.len() - 1);
                        }
                        input = Input::Text(out.texts.len() - 1);
                    }
                    Pending::Heredoc(strip) => {
                        out.texts.push(String::new());
                        let slot = out.texts.len() - 1;
                        heredocs.push((w.text, strip, slot, w.quoted));
                        input = Input::Text(slot);
                    }
                }
            }
        };
    }
    macro_rules! finish_cmd {
        () => {
            finish_word!();
            pending = Pending::None;
            let start = cmd_start.take().unwrap_or(i);
            if !words.is_empty() {
                out.cmds.push(Simple {
                    words: std::mem::take(&mut words),
                    input: std::mem::replace(&mut input, Inherit),
                    span: (start, i.min(n)),
                    writes: out.writes[cmd_writes..].to_vec(),
                });
            } else {
                let at = out.cmds.len();
                let orphans: Vec<(usize, String)> = out.writes[cmd_writes..]
                    .iter()
                    .map(|w| (at, w.clone()))
                    .collect();
                out.orphan_writes.extend(orphans);
            }
            cmd_writes = out.writes.len();
        };
    }
    use Input::Inherit;

    while i < n {
        let ch = c[i];
        if cmd_start.is_none()
            && !matches!(ch, ' ' | '\t' | '\n' | ';' | '(' | ')' | '|' | '&')
            && !(ch == '#' && word.is_none())
        {
            cmd_start = Some(i);
        }
        // Inside `[[ ... ]]`, `<` and `>` compare strings: they are words, not redirections.
        let in_test =
            words.first().is_some_and(|w| w.text == "[[") && !words.iter().any(|w| w.text == "]]");
        // The thirty-eighth round: the word after `=~` in `[[ ... ]]` is a regex, which bash
        // reads as one word: `(` and `|` are part of it, parentheses nest and hold blanks,
        // `;`, `&`, `<`, `>` and `#`, and only a blank (or `;`, `&`, ...) outside them ends
        // it. `[[ x =~ (a)# ]] ; cmd` runs `cmd`: the `#` is no comment.
        let regex = dbracket && words.last().is_some_and(|w| w.text == "=~" && !w.quoted);
        if !regex {
            re_depth = 0;
        }
        match ch {
            '(' | '|' if regex => {
                word.get_or_insert_with(Word::default).text.push(ch);
                re_depth += usize::from(ch == '(');
                i += 1;
            }
            ')' if regex && re_depth > 0 => {
                word.get_or_insert_with(Word::default).text.push(ch);
                re_depth -= 1;
                i += 1;
            }
            ' ' | '\t' | '\n' | ';' | '&' | '<' | '>' | '#' if regex && re_depth > 0 => {
                if ch == '\n' {
                    // Bash reads on, but here-documents and lines get murky: denied.
                    out.opaque = Some("a line break inside the regex of `[[ ... =~ ... ]]`".into());
                }
                word.get_or_insert_with(Word::default).text.push(ch);
                i += 1;
            }
            '<' | '>' if in_test && !(i + 1 < n && c[i + 1] == '(') => {
                word.get_or_insert_with(Word::default).text.push(ch);
                i += 1;
            }
            '(' if i + 1 < n
                && c[i + 1] == '('
                && word.is_none()
                && (words.is_empty()
                    || (words.len() == 1 && words[0].text == "for" && !words[0].dynamic))
                && close_paren(&c, i + 1) + 1 == close_paren(&c, i) =>
            {
                // `(( expr ))` and `for (( ...; ...; ... ))`: arithmetic, where `<<` is a
                // shift, not a here-document.
                let end = close_paren(&c, i);
                let body = text(i + 2, end.saturating_sub(1));
                add_substitutions(&body, true, &mut out);
                out.arith.push(body.clone());
                if cmd_start.is_none() || words.is_empty() {
                    cmd_start = Some(i);
                }
                words.push(Word {
                    text: "((".into(),
                    ..Word::default()
                });
                words.push(Word {
                    text: body,
                    dynamic: true,
                    ..Word::default()
                });
                i = end + 1;
                finish_cmd!();
            }
            // The thirty-seventh round: only a space, a tab and a newline separate words, as in
            // bash; a carriage return is a word character (`true\r#` is one word, no comment).
            ' ' | '\t' => {
                finish_word!();
                i += 1;
            }
            '\n' => {
                finish_cmd!();
                i += 1;
                // Here-document bodies follow the line that opened them.
                for (delim, strip, slot, quoted) in std::mem::take(&mut heredocs) {
                    // The thirty-sixth round: bash joins a line of an unquoted body that ends
                    // in an unescaped backslash with the next before comparing it with the
                    // delimiter (`EO\⏎F` ends the document); dash compares each line as
                    // written. Where the two readings end the document at different places,
                    // what runs after it depends on the shell: denied.
                    let (body, next, found) = heredoc_body(&c, i, &delim, strip, !quoted);
                    if !quoted && heredoc_body(&c, i, &delim, strip, false).1 != next {
                        out.opaque = Some(format!(
                            "a here-document whose end `{delim}` a line continuation moves: \
                             bash and other shells end it at different lines"
                        ));
                    }
                    i = next;
                    if !found {
                        out.opaque = Some(format!("a here-document without its end `{delim}`"));
                    }
                    // An unquoted delimiter expands `$(...)` and backquotes in the body; a
                    // quoted one does not, but telling them apart is not worth a miss.
                    add_substitutions(&body, !quoted, &mut out);
                    // The thirty-fifth round: an unquoted delimiter expands the body first, so
                    // the program reads text only known at run time.
                    if !quoted && expands(&body) {
                        out.expanded.push(slot);
                    }
                    // The thirty-sixth round: and its arithmetic (`$((x))`, `${s:x}`) too.
                    if !quoted {
                        body_expansions(&body, &mut out);
                    }
                    out.texts[slot] = body;
                }
                if i > n {
                    i = n;
                }
            }
            '(' if i > 0 && word.is_some() && matches!(c[i - 1], '@' | '+' | '!' | '*' | '?') => {
                // An extglob pattern (`@(t)mux`, `+(a|b)`, `!(x)`): part of the word, and a
                // glob whatever `shopt` says (bash reads it so once `extglob` is on).
                let end = close_paren(&c, i);
                let w = word.get_or_insert_with(Word::default);
                w.text.push_str(&text(i, end + 1));
                w.dynamic = true;
                w.split = true;
                i = end + 1;
            }
            '(' if word
                .as_ref()
                .is_some_and(|w| compound_assignment_head(&w.text)) =>
            {
                // The thirty-seventh round: `a=(x y)`, `a+=(x)`, `declare a=(x)` is one word
                // to bash, which goes on after the `)` (`a=(x)#` is no comment). Its words
                // are read as a command line, as before.
                let end = close_group(&c, i, true).unwrap_or_else(|| {
                    out.opaque = Some("a compound assignment whose end is unclear".into());
                    n
                });
                out.subs.push(text(i + 1, end));
                let w = word.get_or_insert_with(Word::default);
                w.text.push_str(&text(i, end + 1));
                i = end + 1;
            }
            ';' | '(' | ')' => {
                finish_cmd!();
                i += 1;
            }
            '|' => {
                let or = i + 1 < n && c[i + 1] == '|';
                finish_cmd!();
                if or {
                    i += 2;
                } else {
                    // `|` and `|&`: the next command reads this one's output.
                    input = Input::Pipe;
                    i += 1;
                    if i < n && c[i] == '&' {
                        i += 1;
                    }
                }
            }
            '&' if i + 1 < n && c[i + 1] == '>' => {
                // `&>file`, `&>>file`: a redirection, not a separator.
                finish_word!();
                i += 2;
                while i < n && c[i] == '>' {
                    i += 1;
                }
                pending = Pending::WriteTarget;
            }
            '&' => {
                finish_cmd!();
                i += 1;
            }
            '<' | '>' if i + 1 < n && c[i + 1] == '(' => {
                // Process substitution: a command line whose output becomes a file name.
                let end = close_group(&c, i + 1, false).unwrap_or_else(|| {
                    out.opaque = Some("a process substitution whose end is unclear".into());
                    n
                });
                out.subs.push(text(i + 2, end));
                let w = word.get_or_insert_with(Word::default);
                w.text.push_str(&text(i, end + 1));
                w.dynamic = true;
                w.runtime = true;
                i = end + 1;
            }
            '<' | '>' => {
                if word.as_ref().is_some_and(|w| {
                    !w.text.is_empty() && w.text.chars().all(|d| d.is_ascii_digit())
                }) {
                    word = None;
                }
                finish_word!();
                let start = i;
                while i < n && matches!(c[i], '<' | '>' | '&' | '|' | '-') {
                    i += 1;
                }
                let op = text(start, i);
                pending = match op.as_str() {
                    "<<<" => Pending::HereString,
                    "<<" => Pending::Heredoc(false),
                    "<<-" => Pending::Heredoc(true),
                    "<" => {
                        input = Input::File;
                        Pending::Target
                    }
                    // `>&-`, `<&-`: closing a descriptor takes no word.
                    o if o.ends_with('-') && o.len() > 1 => Pending::None,
                    // `>&2` duplicates a descriptor, `>& file` writes a file (round 37).
                    ">&" | ">>&" => Pending::DupTarget,
                    // `>&2`, `<&0`: a descriptor; `>`, `>>`, `>|`, `<>`: a file written.
                    o if o.contains('>') && !o.ends_with('&') => Pending::WriteTarget,
                    _ => Pending::Target,
                };
            }
            '#' if word.is_none() => {
                if dbracket {
                    // A comment inside `[[ ... ]]` is legal but a place where the guard and
                    // bash may disagree about what is a word (round 38): denied.
                    out.opaque = Some("a comment inside `[[ ... ]]`".into());
                }
                while i < n && c[i] != '\n' {
                    i += 1;
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(Word::default);
                w.quoted = true;
                i += 1;
                while i < n && c[i] != '\'' {
                    w.lit |= matches!(c[i], '$' | '`');
                    w.text.push(c[i]);
                    i += 1;
                }
                if i >= n {
                    out.opaque = Some("an unterminated single quote".into());
                }
                i += 1;
            }
            '"' => {
                i = lex_double_quoted(&c, i + 1, &mut word, &mut out);
            }
            '\\' => {
                if i + 1 < n {
                    if c[i + 1] != '\n' {
                        let w = word.get_or_insert_with(Word::default);
                        w.quoted = true;
                        w.lit |= matches!(c[i + 1], '$' | '`');
                        w.text.push(c[i + 1]);
                    }
                    i += 2;
                } else {
                    i += 1;
                }
            }
            '$' if i + 1 < n && c[i + 1] == '\'' => {
                let w = word.get_or_insert_with(Word::default);
                w.quoted = true;
                i += 2;
                while i < n && c[i] != '\'' {
                    if c[i] == '\\' && i + 1 < n {
                        match c[i + 1] {
                            'n' => w.text.push('\n'),
                            't' => w.text.push('\t'),
                            'r' => w.text.push('\r'),
                            '\\' | '\'' | '"' | '?' => w.text.push(c[i + 1]),
                            // \x41, \101, \u0041, \cA, \e ...: a value the guard does not
                            // decode.
                            other => {
                                w.text.push('\\');
                                w.text.push(other);
                                w.dynamic = true;
                                w.runtime = true;
                                w.undecoded = true;
                            }
                        }
                        i += 2;
                    } else {
                        w.lit |= matches!(c[i], '$' | '`');
                        w.text.push(c[i]);
                        i += 1;
                    }
                }
                if i >= n {
                    out.opaque = Some("an unterminated $'...' quote".into());
                }
                i += 1;
            }
            '$' if i + 1 < n && c[i + 1] == '"' => {
                // $"..." (a translated string): like "...".
                i = lex_double_quoted(&c, i + 2, &mut word, &mut out);
            }
            '$' => {
                let next = lex_dollar(&c, i, &mut word, &mut out);
                if next > i + 1
                    && let Some(w) = word.as_mut()
                {
                    w.split = true;
                }
                i = next;
            }
            '`' => {
                let end = close_backquote(&c, i + 1);
                if end >= n {
                    out.opaque = Some("an unterminated backquote".into());
                }
                out.subs.push(text(i + 1, end));
                let w = word.get_or_insert_with(Word::default);
                w.text.push_str(&text(i, end + 1));
                w.dynamic = true;
                w.runtime = true;
                w.split = true;
                i = end + 1;
            }
            '*' | '?' | '[' | '{' | '}' => {
                let w = word.get_or_insert_with(Word::default);
                w.text.push(ch);
                // A glob or a brace expansion, unless the word is only the bracket or brace
                // itself (`[`, `[[`, `{`, `}`, `]]`), which is a command or keyword.
                let alone = i + 1 >= n || matches!(c[i + 1], ' ' | '\t' | '\n' | ';' | '&' | '|');
                if !(alone && w.text.chars().all(|x| x == ch)) {
                    w.dynamic = true;
                    w.split = true;
                } else if w.text == "[[" {
                    // The first `[` of `[[` looked like a glob's start until the second came.
                    w.dynamic = false;
                }
                i += 1;
            }
            other => {
                word.get_or_insert_with(Word::default).text.push(other);
                i += 1;
            }
        }
    }
    finish_cmd!();
    if !heredocs.is_empty() {
        out.opaque = Some("a here-document without its body".into());
    }
    out
}

/// Reads a here-document body from `i` (just after the newline of the line that opened it)
/// as bash's `read_a_line` does: with `join` (an unquoted delimiter), a backslash escapes the
/// next character, and a backslash-newline pair not itself escaped (an odd run of
/// backslashes) vanishes, so the line goes on, *before* the line is compared with the
/// delimiter (after `<<-` strips its leading tabs). Returns the body (joined lines, tabs kept),
/// the index after the delimiter's line, and whether the delimiter was found.
fn heredoc_body(
    c: &[char],
    mut i: usize,
    delim: &str,
    strip: bool,
    join: bool,
) -> (String, usize, bool) {
    let n = c.len();
    let mut body = String::new();
    while i < n {
        let mut line = String::new();
        let mut escaped = false;
        while i < n {
            let ch = c[i];
            i += 1;
            if escaped {
                escaped = false;
            } else if join && ch == '\\' {
                if c.get(i) == Some(&'\n') {
                    i += 1;
                    continue;
                }
                escaped = true;
            } else if ch == '\n' {
                break;
            }
            line.push(ch);
        }
        let cmp = if strip {
            line.trim_start_matches('\t')
        } else {
            &line
        };
        if cmp == delim {
            return (body, i, true);
        }
        body.push_str(&line);
        body.push('\n');
    }
    (body, i, false)
}

/// Lexes a double-quoted string starting after its opening quote; returns the index after
/// its closing quote.
fn lex_double_quoted(c: &[char], mut i: usize, word: &mut Option<Word>, out: &mut Lexed) -> usize {
    let n = c.len();
    word.get_or_insert_with(Word::default).quoted = true;
    while i < n && c[i] != '"' {
        match c[i] {
            '\\' if i + 1 < n && matches!(c[i + 1], '$' | '`' | '"' | '\\' | '\n') => {
                if c[i + 1] != '\n'
                    && let Some(w) = word.as_mut()
                {
                    w.lit |= matches!(c[i + 1], '$' | '`');
                    w.text.push(c[i + 1]);
                }
                i += 2;
            }
            '$' => i = lex_dollar(c, i, word, out),
            '`' => {
                let end = close_backquote(c, i + 1);
                out.subs
                    .push(c[(i + 1).min(n)..end.min(n)].iter().collect());
                if let Some(w) = word.as_mut() {
                    w.text.extend(&c[i..(end + 1).min(n)]);
                    w.dynamic = true;
                    w.runtime = true;
                }
                i = end + 1;
            }
            other => {
                if let Some(w) = word.as_mut() {
                    w.text.push(other);
                }
                i += 1;
            }
        }
    }
    if i >= n {
        out.opaque = Some("an unterminated double quote".into());
    }
    i + 1
}

/// Lexes a `$` expansion at `i` (not `$'`); returns the index after it.
fn lex_dollar(c: &[char], i: usize, word: &mut Option<Word>, out: &mut Lexed) -> usize {
    let n = c.len();
    let w = word.get_or_insert_with(Word::default);
    let next = c.get(i + 1).copied();
    match next {
        Some('(')
            if c.get(i + 2) == Some(&'(') && close_paren(c, i + 2) + 1 == close_paren(c, i + 1) =>
        {
            // `$(( expr ))`: arithmetic; its `$(...)` run, its `<<` is a shift.
            let end = close_paren(c, i + 1);
            let body: String = c[(i + 3).min(n)..end.saturating_sub(1).max(i + 3).min(n)]
                .iter()
                .collect();
            if end >= n {
                out.opaque = Some("an unterminated $((...))".into());
            }
            add_substitutions(&body, true, out);
            out.arith.push(body);
            w.text.extend(&c[i..(end + 1).min(n)]);
            w.dynamic = true;
            w.runtime = true;
            end + 1
        }
        Some('[') => {
            // `$[ expr ]`: old-style arithmetic.
            let end = close_pair(c, i + 1, '[', ']');
            let body: String = c[(i + 2).min(n)..end.min(n)].iter().collect();
            add_substitutions(&body, true, out);
            out.arith.push(body);
            w.text.extend(&c[i..(end + 1).min(n)]);
            w.dynamic = true;
            w.runtime = true;
            end + 1
        }
        Some('(') => {
            let end = close_group(c, i + 1, false).unwrap_or_else(|| {
                out.opaque = Some("a $(...) whose end is unclear".into());
                n
            });
            out.subs
                .push(c[(i + 2).min(n)..end.min(n)].iter().collect());
            w.text.extend(&c[i..(end + 1).min(n)]);
            w.dynamic = true;
            w.runtime = true;
            end + 1
        }
        Some('{') => {
            let end = close_brace(c, i + 1);
            if end >= n {
                out.opaque = Some("an unterminated ${...}".into());
            }
            // `${x:-$(cmd)}`: the word inside may hold substitutions of its own.
            let inner: String = c[(i + 2).min(n)..end.min(n)].iter().collect();
            parameter_expansion(&inner, out);
            w.runtime |= !matches!(inner.as_str(), "PWD" | "HOME" | "#" | "?" | "$" | "!");
            out.subs.push(inner);
            w.text.extend(&c[i..(end + 1).min(n)]);
            w.dynamic = true;
            end + 1
        }
        Some(ch) if ch.is_ascii_alphanumeric() || "_@*#?$!-".contains(ch) => {
            let mut j = i + 1;
            if ch.is_ascii_alphabetic() || ch == '_' {
                while j < n && (c[j].is_ascii_alphanumeric() || c[j] == '_') {
                    j += 1;
                }
            } else {
                j += 1;
            }
            let name: String = c[i + 1..j].iter().collect();
            w.runtime |= !matches!(name.as_str(), "PWD" | "HOME" | "#" | "?" | "$" | "!");
            w.text.extend(&c[i..j]);
            w.dynamic = true;
            j
        }
        _ => {
            w.text.push('$');
            w.lit = true;
            i + 1
        }
    }
}

/// What a `${...}` (its text inside the braces) evaluates: `${!x}`, `${x@P}` and `${x@E}`
/// expand a value as a name or a prompt ([`Lexed::evals`]); a subscript (`${a[i]}`) is
/// arithmetic ([`Lexed::arith`]); and so are a substring's offset and length (`${s:x}`,
/// `${s:0:x}`, `${@: -x}`), where only literal numbers pass ([`Lexed::substrings`]).
fn parameter_expansion(inner: &str, out: &mut Lexed) {
    if inner.starts_with('!') && inner.len() > 1 && inner != "!#" {
        out.evals.push(format!("${{{inner}}}"));
    }
    if inner.contains("@P") || inner.contains("@E") {
        out.evals.push(format!("${{{inner}}}"));
    }
    if let Some((_, sub)) = inner.split_once('[') {
        // `${a[i]}`: the subscript of an indexed array is arithmetic.
        out.arith.push(sub.trim_end_matches(']').to_string());
    }
    if let Some(part) = substring_part(inner)
        && !substring_is_literal(part)
    {
        out.substrings.push(format!("${{{inner}}}"));
    }
}

/// The offset and length of a substring expansion, `x` and `0:x` of `${s:x}` and `${s:0:x}`
/// (also `${@:x}`, `${1:x}`, `${a[0]:x}`); `None` for any other form (`${s:-x}` is a
/// default value, `${s: -x}` a substring).
fn substring_part(inner: &str) -> Option<&str> {
    let b = inner.as_bytes();
    let mut j = match *b.first()? {
        c if c.is_ascii_alphabetic() || c == b'_' => b
            .iter()
            .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))
            .unwrap_or(b.len()),
        c if c.is_ascii_digit() => b
            .iter()
            .position(|c| !c.is_ascii_digit())
            .unwrap_or(b.len()),
        b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-' => 1,
        _ => return None,
    };
    if b.get(j) == Some(&b'[') {
        let mut depth = 0usize;
        while j < b.len() {
            match b[j] {
                b'[' => depth += 1,
                b']' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        j += 1;
    }
    if b.get(j) != Some(&b':') || matches!(b.get(j + 1), Some(b'-' | b'=' | b'?' | b'+')) {
        return None;
    }
    inner.get(j + 1..)
}

/// Whether a substring's offset and length hold no name to evaluate: only digits, spaces,
/// `:` and arithmetic operators. (A `$x` or `${#x}` there is denied too: it made the command
/// word of the `${...}` read as a line only known at run time.)
fn substring_is_literal(part: &str) -> bool {
    part.chars()
        .all(|c| c.is_ascii_digit() || " \t:+-*/%()".contains(c))
}

/// The arithmetic of an unquoted here-document body, which the shell expands as a
/// double-quoted string: `$((...))` and `$[...]` ([`Lexed::arith`]) and `${...}`
/// ([`parameter_expansion`]). Its substitutions are [`substitutions`]'.
fn body_expansions(body: &str, out: &mut Lexed) {
    let c: Vec<char> = body.chars().collect();
    let n = c.len();
    let mut i = 0;
    while i < n {
        match c[i] {
            '\\' => i += 2,
            '$' if c.get(i + 1) == Some(&'(')
                && c.get(i + 2) == Some(&'(')
                && close_paren(&c, i + 2) + 1 == close_paren(&c, i + 1) =>
            {
                let end = close_paren(&c, i + 1);
                out.arith.push(
                    c[(i + 3).min(n)..end.saturating_sub(1).max(i + 3).min(n)]
                        .iter()
                        .collect(),
                );
                i = end + 1;
            }
            '$' if c.get(i + 1) == Some(&'[') => {
                let end = close_pair(&c, i + 1, '[', ']');
                out.arith
                    .push(c[(i + 2).min(n)..end.min(n)].iter().collect());
                i = end + 1;
            }
            '$' if c.get(i + 1) == Some(&'{') => {
                let end = close_brace(&c, i + 1);
                let inner: String = c[(i + 2).min(n)..end.min(n)].iter().collect();
                parameter_expansion(&inner, out);
                i = end + 1;
            }
            _ => i += 1,
        }
    }
}

/// Whether an unquoted here-document body holds an expansion the outer shell makes: a
/// `$(...)`, `${...}`, `$((...))`, `$[...]`, a parameter (but the numbers `$#`, `$?`, `$$`,
/// `$!`) or a backquote not escaped by a backslash.
fn expands(body: &str) -> bool {
    let c: Vec<char> = body.chars().collect();
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '`' => return true,
            '$' if c
                .get(i + 1)
                .is_some_and(|&d| d.is_ascii_alphanumeric() || "({[_@*-".contains(d)) =>
            {
                return true;
            }
            _ => i += 1,
        }
    }
    false
}

/// The command lines inside `$(...)`, `${...}` and backquotes of a here-document body, and
/// whether the end of a `$(...)` was unclear ([`close_group`]; a paren count is used then).
fn substitutions(body: &str) -> (Vec<String>, bool) {
    let c: Vec<char> = body.chars().collect();
    let mut out = Vec::new();
    let mut unclear = false;
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '$' if matches!(c.get(i + 1), Some('(') | Some('{')) => {
                let end = if c[i + 1] == '('
                    && !(c.get(i + 2) == Some(&'(')
                        && close_paren(&c, i + 2) + 1 == close_paren(&c, i + 1))
                {
                    close_group(&c, i + 1, false).unwrap_or_else(|| {
                        unclear = true;
                        close_paren(&c, i + 1)
                    })
                } else {
                    close_brace(&c, i + 1)
                };
                out.push(c[(i + 2).min(c.len())..end.min(c.len())].iter().collect());
                i = end + 1;
            }
            '`' => {
                let end = close_backquote(&c, i + 1);
                out.push(c[(i + 1).min(c.len())..end.min(c.len())].iter().collect());
                i = end + 1;
            }
            _ => i += 1,
        }
    }
    (out, unclear)
}

/// Adds the [`substitutions`] of `body` to `out`; one whose end is unclear makes the line
/// opaque when the shell runs it (`runs`: arithmetic, an unquoted here-document).
fn add_substitutions(body: &str, runs: bool, out: &mut Lexed) {
    let (subs, unclear) = substitutions(body);
    out.subs.extend(subs);
    if unclear && runs {
        out.opaque = Some("a $(...) whose end is unclear".into());
    }
}

/// `comp` with each extglob group (`@(..)`, `+(..)`, `!(..)`, `*(..)`, `?(..)`) taken as `*`.
fn extglob_as_star(comp: &str) -> String {
    let c: Vec<char> = comp.chars().collect();
    let mut out = String::new();
    let mut k = 0;
    while k < c.len() {
        if matches!(c[k], '@' | '+' | '!' | '*' | '?') && c.get(k + 1) == Some(&'(') {
            out.push('*');
            k = close_paren(&c, k + 1) + 1;
        } else {
            out.push(c[k]);
            k += 1;
        }
    }
    out
}

/// Index of the `)` closing the `(` at `open`, skipping quotes; `c.len()` if unterminated.
fn close_paren(c: &[char], open: usize) -> usize {
    close_pair(c, open, '(', ')')
}

fn close_brace(c: &[char], open: usize) -> usize {
    close_pair(c, open, '{', '}')
}

fn close_pair(c: &[char], open: usize, o: char, cl: char) -> usize {
    let mut depth = 0usize;
    let mut j = open;
    while j < c.len() {
        match c[j] {
            x if x == o => depth += 1,
            x if x == cl => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return j;
                }
            }
            '\\' => j += 1,
            '\'' => {
                j += 1;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
            }
            '"' => {
                j += 1;
                while j < c.len() && c[j] != '"' {
                    if c[j] == '\\' {
                        j += 1;
                    }
                    j += 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    c.len()
}

/// Index of the `)` that closes the `(` at `open`, read as bash reads what is inside: the
/// commands of a `$(...)`, `<(...)` or `>(...)` (`words == false`), or the words of a compound
/// assignment `a=(...)` (`words == true`). The thirty-seventh round: a paren count ended
/// `$(case x in x) ...;; esac)` at the pattern's `)`, and a `)` in a comment or a
/// here-document ended it too, so what bash runs after the real end was read as a comment.
/// Here quotes, escapes, nested substitutions, comments (a `#` starting a word),
/// here-documents and `case ... in pat) ...;; esac` are followed; `None` when the end cannot
/// be found or the text is not what bash would accept (the caller denies the line).
fn close_group(c: &[char], open: usize, words: bool) -> Option<usize> {
    #[derive(PartialEq)]
    enum Frame {
        Paren,
        /// `case`: 0 before the subject, 1 before `in`, 2 in a pattern list (with whether a
        /// pattern has started), 3 in a clause's commands.
        Case(u8, bool),
    }
    let n = c.len();
    let mut stack: Vec<Frame> = Vec::new();
    let mut cmd_pos = true;
    let mut heredocs: Vec<(String, bool, bool)> = Vec::new();
    // Inside `[[ ... ]]`, and whether the next word is the regex after `=~` (round 38).
    let mut dbracket = false;
    let mut regex_next = false;
    let mut j = open + 1;
    while j < n {
        let ch = c[j];
        if regex_next && !matches!(ch, ' ' | '\t') {
            regex_next = false;
            if ch != '\n' {
                j = regex_word_end(c, j)?;
                cmd_pos = false;
                continue;
            }
        }
        match ch {
            ' ' | '\t' => j += 1,
            '\n' => {
                j += 1;
                for (delim, strip, quoted) in std::mem::take(&mut heredocs) {
                    let (body, next, found) = heredoc_body(c, j, &delim, strip, !quoted);
                    if !found {
                        return None;
                    }
                    // The thirty-eighth round: inside `$(...)` bash 5.2 also ends the document
                    // at a line that starts with the delimiter and holds the `)` (`EOF)`,
                    // `EOF )`, `EOFz)`), and runs what follows. A body line (joined or as
                    // written) that starts with the delimiter and is not the delimiter is
                    // denied: the common `EOF` alone on its line passes.
                    let raw: String = c[j..next].iter().collect();
                    let raw_lines: Vec<&str> =
                        raw.strip_suffix('\n').unwrap_or(&raw).split('\n').collect();
                    let written = &raw_lines[..raw_lines.len().saturating_sub(1)];
                    if body.lines().chain(written.iter().copied()).any(|l| {
                        let l = if strip { l.trim_start_matches('\t') } else { l };
                        l.starts_with(delim.as_str())
                    }) {
                        return None;
                    }
                    j = next;
                }
                if !matches!(stack.last(), Some(Frame::Case(0..=2, _))) {
                    cmd_pos = true;
                }
            }
            '#' => {
                if dbracket {
                    return None;
                }
                while j < n && c[j] != '\n' {
                    j += 1;
                }
            }
            ')' => {
                match stack.last_mut() {
                    None => return Some(j),
                    Some(Frame::Paren) => {
                        stack.pop();
                    }
                    Some(f @ Frame::Case(2, true)) => *f = Frame::Case(3, false),
                    Some(_) => return None,
                }
                cmd_pos = true;
                j += 1;
            }
            _ if words => {
                // A compound assignment holds words only.
                if matches!(ch, '(' | ';' | '&' | '|' | '<' | '>') {
                    return None;
                }
                j = scan_word(c, j)?.0;
            }
            '(' => {
                if cmd_pos && c.get(j + 1) == Some(&'(') {
                    // `(( expr ))`: arithmetic, its parens counted.
                    let end = close_paren(c, j);
                    if end < n && close_paren(c, j + 1) + 1 == end {
                        j = end + 1;
                        cmd_pos = false;
                        continue;
                    }
                }
                match stack.last() {
                    // `case x in (pat)`: the optional paren before a pattern.
                    Some(Frame::Case(2, false)) => {
                        if let Some(Frame::Case(_, started)) = stack.last_mut() {
                            *started = true;
                        }
                    }
                    Some(Frame::Case(0..=2, _)) => return None,
                    _ => stack.push(Frame::Paren),
                }
                cmd_pos = true;
                j += 1;
            }
            ';' => {
                if c.get(j + 1) == Some(&';') || c.get(j + 1) == Some(&'&') {
                    // `;;`, `;&`, `;;&`: the end of a case clause.
                    match stack.last_mut() {
                        Some(f @ Frame::Case(3, _)) => *f = Frame::Case(2, false),
                        _ => return None,
                    }
                    j += 2;
                    if c.get(j) == Some(&'&') {
                        j += 1;
                    }
                } else {
                    j += 1;
                }
                cmd_pos = true;
            }
            '&' | '|' => {
                j += 1;
                while j < n && matches!(c[j], '&' | '|') {
                    j += 1;
                }
                if let Some(Frame::Case(2, started)) = stack.last() {
                    // `a|b)`: patterns of one clause.
                    if !started || ch != '|' {
                        return None;
                    }
                } else {
                    cmd_pos = true;
                }
            }
            '<' | '>' if c.get(j + 1) == Some(&'(') => {
                j = close_group(c, j + 1, false)? + 1;
                j = scan_word(c, j)?.0;
                cmd_pos = false;
            }
            '<' | '>' => {
                let start = j;
                while j < n && matches!(c[j], '<' | '>' | '&' | '|' | '-') {
                    j += 1;
                }
                let op: String = c[start..j].iter().collect();
                if op == "<<" || op == "<<-" {
                    while j < n && matches!(c[j], ' ' | '\t') {
                        j += 1;
                    }
                    let (end, delim, quoted) = scan_word(c, j)?;
                    if end == j {
                        return None;
                    }
                    heredocs.push((delim, op == "<<-", quoted));
                    j = end;
                }
            }
            _ => {
                let (end, w, quoted) = scan_word(c, j)?;
                let plain = !quoted && end - j == w.chars().count();
                j = end;
                if plain && w == "[[" {
                    dbracket = true;
                } else if plain && w == "]]" {
                    dbracket = false;
                } else if plain && dbracket && w == "=~" {
                    regex_next = true;
                }
                match stack.last_mut() {
                    Some(f @ Frame::Case(0, _)) => *f = Frame::Case(1, false),
                    Some(f @ Frame::Case(1, _)) => {
                        if !(plain && w == "in") {
                            return None;
                        }
                        *f = Frame::Case(2, false);
                    }
                    Some(Frame::Case(2, started)) => {
                        if plain && w == "esac" && !*started {
                            stack.pop();
                            cmd_pos = false;
                        } else {
                            *started = true;
                        }
                    }
                    _ if cmd_pos && plain && w == "case" => stack.push(Frame::Case(0, false)),
                    Some(Frame::Case(3, _)) if cmd_pos && plain && w == "esac" => {
                        stack.pop();
                        cmd_pos = false;
                    }
                    _ => {
                        cmd_pos = plain
                            && matches!(
                                w.as_str(),
                                "!" | "{"
                                    | "}"
                                    | "then"
                                    | "do"
                                    | "else"
                                    | "elif"
                                    | "if"
                                    | "while"
                                    | "until"
                                    | "time"
                            );
                    }
                }
            }
        }
    }
    None
}

/// The index after the regex word of `[[ ... =~ ... ]]` that starts at `j`, read as bash
/// reads it (round 38): `(` and `|` belong to the word, parentheses nest and hold blanks,
/// `;`, `&`, `<`, `>` and `#`; a blank or one of those outside them ends it. `None` (the
/// caller denies) for a word starting with `#`, a line break inside parentheses, or an
/// unbalanced group.
fn regex_word_end(c: &[char], mut j: usize) -> Option<usize> {
    let n = c.len();
    if c.get(j) == Some(&'#') {
        return None;
    }
    let mut depth = 0usize;
    while j < n {
        match c[j] {
            '\n' if depth > 0 => return None,
            ' ' | '\t' | '\n' | ';' | '&' | '<' | '>' | ')' if depth == 0 => break,
            '(' => {
                depth += 1;
                j += 1;
            }
            ')' => {
                depth -= 1;
                j += 1;
            }
            '|' | ' ' | '\t' | ';' | '&' | '<' | '>' | '#' => j += 1,
            _ => j = scan_word(c, j)?.0.max(j + 1),
        }
    }
    (depth == 0).then_some(j)
}

/// Reads one shell word from `j` (quotes, escapes, `$'...'`, substitutions, `${...}`,
/// backquotes, an extglob group, a compound assignment); returns the index after it, its text
/// with quotes taken off (what a here-document delimiter or a reserved word compares), and
/// whether any of it was quoted. `None` when something in it is unterminated.
fn scan_word(c: &[char], mut j: usize) -> Option<(usize, String, bool)> {
    let n = c.len();
    let mut text = String::new();
    let mut quoted = false;
    while j < n {
        match c[j] {
            ' ' | '\t' | '\n' | ';' | '&' | '|' | ')' | '<' | '>' => break,
            '(' => {
                if compound_assignment_head(&text) {
                    j = close_group(c, j, true)? + 1;
                } else if text.ends_with(['@', '+', '!', '*', '?']) {
                    j = close_paren(c, j) + 1;
                    if j > n {
                        return None;
                    }
                } else {
                    break;
                }
            }
            '\\' => {
                quoted = true;
                if let Some(&e) = c.get(j + 1)
                    && e != '\n'
                {
                    text.push(e);
                }
                j += 2;
            }
            '\'' => {
                quoted = true;
                j += 1;
                while j < n && c[j] != '\'' {
                    text.push(c[j]);
                    j += 1;
                }
                if j >= n {
                    return None;
                }
                j += 1;
            }
            '"' => {
                quoted = true;
                j += 1;
                while j < n && c[j] != '"' {
                    match c[j] {
                        '\\' => {
                            if let Some(&e) = c.get(j + 1) {
                                text.push(e);
                            }
                            j += 2;
                        }
                        '$' => j = scan_dollar(c, j)?,
                        '`' => j = close_backquote(c, j + 1) + 1,
                        other => {
                            text.push(other);
                            j += 1;
                        }
                    }
                }
                if j >= n {
                    return None;
                }
                j += 1;
            }
            '$' if c.get(j + 1) == Some(&'\'') => {
                quoted = true;
                j += 2;
                while j < n && c[j] != '\'' {
                    j += if c[j] == '\\' { 2 } else { 1 };
                }
                if j >= n {
                    return None;
                }
                j += 1;
            }
            '$' => {
                quoted = true;
                j = scan_dollar(c, j)?;
            }
            '`' => {
                quoted = true;
                j = close_backquote(c, j + 1) + 1;
            }
            other => {
                text.push(other);
                j += 1;
            }
        }
        if j > n {
            return None;
        }
    }
    Some((j.min(n), text, quoted))
}

/// The index after the `$` expansion at `j` (`$(...)`, `$((...))`, `${...}`, `$[...]`, `$x`).
fn scan_dollar(c: &[char], j: usize) -> Option<usize> {
    let n = c.len();
    let end = match c.get(j + 1) {
        Some('(')
            if c.get(j + 2) == Some(&'(') && close_paren(c, j + 2) + 1 == close_paren(c, j + 1) =>
        {
            close_paren(c, j + 1)
        }
        Some('(') => close_group(c, j + 1, false)?,
        Some('{') => close_brace(c, j + 1),
        Some('[') => close_pair(c, j + 1, '[', ']'),
        _ => return Some(j + 1),
    };
    (end < n).then_some(end + 1)
}

/// Index of the backquote closing one opened just before `from`; `c.len()` if unterminated.
fn close_backquote(c: &[char], from: usize) -> usize {
    let mut j = from;
    while j < c.len() && c[j] != '`' {
        if c[j] == '\\' {
            j += 1;
        }
        j += 1;
    }
    j.min(c.len())
}

// ---------------------------------------------------------------------------------------------
// Classifier

/// Where a simple command stands.
#[derive(Debug, Clone, Copy, Default)]
struct Ctx {
    depth: usize,
    /// Inside something else (`sh -c`, `$(...)`, `eval`, a command string): form (b) is only
    /// allowed as a top-level command. The value says where.
    nested: Option<&'static str>,
    /// A wrapper or prefix that changes the command's environment or arguments.
    env: Option<&'static str>,
    /// The command's arguments are extended at run time (`xargs`).
    tainted: bool,
    /// A top-level simple command of the line, run directly (no wrapper): its place in the
    /// source.
    span: Option<(usize, usize)>,
}

impl Ctx {
    fn inner(self, why: &'static str) -> Ctx {
        Ctx {
            depth: self.depth + 1,
            nested: Some(self.nested.unwrap_or(why)),
            env: self.env,
            tainted: false,
            span: None,
        }
    }
}

#[derive(Default)]
struct Scan {
    findings: Vec<Finding>,
    /// The suffixes of words a runner already judged as a command (start address, length):
    /// nested runners share them, so each is judged once.
    runner_seen: std::collections::HashSet<(usize, usize)>,
    /// A command anywhere in the line that changes the shell's environment or directory.
    env_change: Option<String>,
    /// The whole top-level line (for "does it mention tmux" questions about pipes).
    line: String,
    /// The top-level line, as chars (spans index it).
    chars: Vec<char>,
    /// Spans of top-level tmux commands fully classified as read-only or form (b).
    exempt: Vec<(usize, usize)>,
    /// The top-level line is one simple command, with no substitution, here-document,
    /// arithmetic or parse problem.
    top_single: Option<(usize, usize)>,
    /// The absolute path of the real tmux binary (resolved by the hook), if known.
    tmux_bin: Option<String>,
    /// Files the line writes (redirection targets, the arguments of `cp`, `tee`, ...).
    written: Vec<String>,
    /// A decoder in the line (`base64`, `xxd`, `openssl`, ...): it can write anything.
    decoder: Option<String>,
    /// Files the line runs as code (`. f`, `bash f`, `./f`, a makefile), with how.
    runs: Vec<(String, String)>,
    /// Simple commands seen so far: tells a command from the others.
    seq: usize,
    /// Files written with content the guard cannot read (a decoder's output, a copy, a
    /// download, a program's output, a dynamic here-document): the writing command's `seq`,
    /// what wrote it, and the `seq` of the command whose output it saves, if it only saves
    /// what the command before it in a pipe printed (`cargo test | tee log`).
    unreadable: Vec<(usize, String, Option<usize>)>,
    /// Literal text written to files so far (`echo text > f`), judged as one program.
    literal_written: String,
    /// Commands that can load code from the current directory or a path (interpreters,
    /// build tools, package managers, shells running a script), by `seq`, with how.
    loaders: Vec<(usize, String)>,
    /// A tmux command anywhere in the line (read-only ones included).
    runs_tmux: bool,
    /// The first command in the line, other than tmux, that is not a text filter.
    not_a_filter: Option<String>,
}

fn mentions_tmux(s: &str) -> bool {
    s.to_ascii_lowercase().contains("tmux")
}

/// `tmux` as a word of its own inside `s` (`runner=tmux`, `/usr/bin/tmux`, `x,tmux`), not
/// as part of a name (`tmuxinator`) or a file name (`tmux.conf`).
fn names_tmux(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    let b = l.as_bytes();
    let mut from = 0;
    while let Some(k) = l[from..].find("tmux") {
        let at = from + k;
        let before = at.checked_sub(1).map(|i| b[i]);
        let after = b.get(at + 4).copied();
        let word_char = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_');
        if !word_char(before) && !word_char(after) && after != Some(b'.') {
            return true;
        }
        from = at + 4;
    }
    false
}

/// A path that names a file descriptor: `Some(true)` for stdin (`/dev/stdin`, `/dev/fd/0`,
/// `/proc/<pid>/fd/0`), `Some(false)` for another descriptor, a terminal or anything else
/// under `/dev` or `/proc` but `/dev/null`, `None` for a plain path. The path is read as the
/// kernel reads it: `//`, `/./` and `..` collapse (`/dev//stdin`, `../../dev/fd/0`).
fn fd_path(p: &str) -> Option<bool> {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    // A relative path climbing with `..` may reach the root: judged as if it did.
    if !p.starts_with('/') && !p.split('/').any(|c| c == "..") {
        return None;
    }
    match parts.as_slice() {
        ["dev", "null"] => None,
        ["dev", "stdin"] | ["dev", "fd", "0"] | ["proc", _, "fd", "0"] => Some(true),
        ["proc", _, "task", _, "fd", "0"] => Some(true),
        ["dev" | "proc", ..] => Some(false),
        _ => None,
    }
}

/// The words that may name an interpreter's program file (`python3 /dev/stdin`,
/// `awk -f /dev/fd/0`, `node -r /dev/stdin -e 1`), as the values to judge. awk, sed and make
/// take theirs from `-f`/`--file` (gawk also `-E`/`--exec`/`-i`/`--include`), their other
/// words being a program or data. Any other interpreter: with its program given inline (`-c`,
/// `-e`) or as a module (`-m`), the words before it and the values of options (`-r
/// /dev/stdin`, `-r/dev/stdin`, `--require=/dev/stdin`); else every word (an option's value may come
/// first: `python3 -W ignore /dev/stdin`).
fn program_paths(base: &str, rest: &[Word]) -> Vec<(String, bool)> {
    let attached = |w: &str| -> Option<String> {
        if w.starts_with("--") {
            w.split_once('=').map(|(_, v)| v.to_string())
        } else if w.starts_with('-') {
            w.find('/').map(|k| w[k..].to_string())
        } else {
            None
        }
    };
    let mut out = Vec::new();
    if matches!(
        base,
        "awk" | "gawk" | "mawk" | "nawk" | "sed" | "gsed" | "make" | "gmake"
    ) {
        for (k, w) in rest.iter().enumerate() {
            let t = w.text.as_str();
            let takes = matches!(t, "-f" | "--file" | "-E" | "--exec" | "-i" | "--include")
                || (t.starts_with('-')
                    && !t.starts_with("--")
                    && t.len() > 2
                    && t[1..].chars().all(|c| c.is_ascii_alphabetic())
                    && t.ends_with('f'));
            if takes && let Some(v) = rest.get(k + 1) {
                out.push((v.text.clone(), v.dynamic));
            }
            if let Some(v) = t
                .strip_prefix("--file=")
                .or_else(|| t.strip_prefix("--makefile="))
                .or_else(|| t.strip_prefix("--include="))
                .or_else(|| t.strip_prefix("--exec="))
                .or_else(|| t.strip_prefix("-f").filter(|v| !v.is_empty()))
            {
                out.push((v.to_string(), w.dynamic));
            }
        }
        return out;
    }
    let given = rest.iter().position(|w| {
        inline_code_flag(&w.text)
            || (base.starts_with("python") || base.starts_with("pypy")) && w.text == "-m"
    });
    for (k, w) in rest.iter().enumerate() {
        let after_option = k > 0 && rest[k - 1].text.starts_with('-');
        if (given.is_none_or(|g| k < g) && !w.text.starts_with('-')) || after_option {
            out.push((w.text.clone(), w.dynamic));
        }
        if let Some(v) = attached(&w.text) {
            out.push((v, w.dynamic));
        }
    }
    out
}

/// The dynamic loader, which runs the program named by its first argument (`ld.so`,
/// `ld-linux-x86-64.so.2`, `ld-musl-x86_64.so.1`, `ld64.so.2`, `ld.so.1`).
fn is_loader(base: &str) -> bool {
    base == "ld.so"
        || base.starts_with("ld.so.")
        || base.starts_with("ld-linux")
        || base.starts_with("ld-musl")
        || base.starts_with("ld64.so")
}

/// The names a path or glob argument (`/usr/bin/das?`, `/usr/bin/python3*`,
/// `/usr/bin/{da,ba}sh`, `/usr/bin/@(da)sh`) may name, among the programs that run code or
/// their arguments: tmux, shells, interpreters, wrappers, runners, programs that run a shell,
/// `busybox`/`toybox` and the loader (each with any version suffix: `python3.11`, `ksh93`).
/// A component of `*`s alone names none (`tar czf x.tgz *`), as for rule 2; an exact name is
/// left to the caller. Too many brace alternatives name them all.
fn glob_program_names(word: &str) -> Vec<&'static str> {
    const LOADERS: &[&str] = &[
        "ld.so",
        "ld-linux-x86-64.so.",
        "ld-linux.so.",
        "ld-linux-aarch64.so.",
        "ld-musl-x86_64.so.",
        "ld64.so.",
    ];
    let candidates = || {
        std::iter::once("tmux")
            .chain(SHELLS.iter().copied())
            .chain(INTERPRETERS.iter().copied())
            .chain(WRAPPERS.iter().map(|(w, ..)| *w))
            .chain(RUNNERS.iter().copied())
            .chain(SHELL_LIKE.iter().copied())
            .chain(LOADERS.iter().copied())
            .chain(["busybox", "toybox", "eval"])
    };
    let Some(alts) = expand_braces(&named_classes_marked(word)) else {
        return vec!["sh"];
    };
    let mut out: Vec<&'static str> = Vec::new();
    for alt in alts {
        let comp = alt.rsplit('/').next().unwrap_or(&alt);
        // An extglob group (`@(da)sh`) is taken as `*`.
        let pat = extglob_as_star(comp);
        let toks = glob_tokens(&pat);
        if toks.iter().all(|t| *t == Glob::Star) {
            continue;
        }
        let globbed = toks.iter().any(|t| !matches!(t, Glob::Lit(_)));
        for name in candidates() {
            let hit = if globbed {
                matches_versioned(&toks, name)
            } else {
                basename(&pat) == name
            };
            if hit && !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// Whether the glob tokens may match `stem` followed by any version suffix of digits and
/// dots (`python3*` and `python3.1?` match `python`; `das?` matches `dash`).
fn matches_versioned(toks: &[Glob], stem: &str) -> bool {
    let n = toks.len();
    let closure = |set: &mut Vec<bool>| {
        for i in 0..n {
            if set[i] && toks[i] == Glob::Star {
                set[i + 1] = true;
            }
        }
    };
    let mut cur = vec![false; n + 1];
    cur[0] = true;
    closure(&mut cur);
    for ch in stem.chars() {
        let mut next = vec![false; n + 1];
        for i in 0..n {
            if cur[i] && tok_matches(&toks[i], ch) {
                next[if toks[i] == Glob::Star { i } else { i + 1 }] = true;
            }
        }
        closure(&mut next);
        cur = next;
    }
    (0..=n).any(|i| {
        cur[i]
            && toks[i..]
                .iter()
                .all(|t| *t == Glob::Star || "0123456789.".chars().any(|d| tok_matches(t, d)))
    })
}

/// Whether a word read so far is the head of a compound assignment (`a=`, `a+=`, `a[1]=`),
/// which a `(` right after it opens.
fn compound_assignment_head(w: &str) -> bool {
    w.strip_suffix('=')
        .map(|t| t.strip_suffix('+').unwrap_or(t))
        .is_some_and(|t| is_identifier(t.split('[').next().unwrap_or(t)))
}

fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            let name = name.strip_suffix('+').unwrap_or(name);
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Variables whose change can make tmux reach another server or binary.
fn sensitive_var(name: &str) -> bool {
    name.starts_with("TMUX")
        || name.starts_with("LD_")
        || name.starts_with("BASH_")
        || matches!(
            name,
            "PATH" | "HOME" | "ENV" | "SHELL" | "IFS" | "XDG_RUNTIME_DIR" | "CDPATH" | "USER"
        )
}

/// Programs that run a shell (reading its commands from stdin when given no command).
const SHELL_LIKE: &[&str] = &[
    "su",
    "runuser",
    "sg",
    "newgrp",
    "script",
    "ssh",
    "docker",
    "podman",
    "unshare",
    "nsenter",
    "chroot",
    "bwrap",
    "firejail",
    "setpriv",
    "systemd-run",
    "screen",
    "byobu",
    "login",
    "machinectl",
    "sudo",
    "doas",
    "kubectl",
];

/// Whether `w` occurs in `l` as a whole identifier (not inside a longer name).
fn has_ident(l: &str, w: &str) -> bool {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    l.match_indices(w)
        .any(|(i, _)| !ident(l[..i].chars().next_back()) && !ident(l[i + w.len()..].chars().next()))
}

/// Code that reaches a name only known when it runs (`getattr(os, 'sys'+'tem')`,
/// `require('chil'+'d_process')`), signals a process, opens a pipe to a command, or opens a
/// socket ([`socket_code`]): the guard cannot tell what it calls.
fn dynamic_code(l: &str) -> bool {
    [
        "getattr",
        "__getattribute__",
        "__dict__",
        "vars",
        "globals",
        "locals",
        "__import__",
        "import_module",
        "modules",
        "methodcaller",
        "attrgetter",
        "__builtins__",
        "__subclasses__",
        "__globals__",
        "eval",
        "kill",
        "killpg",
        "pidfd_send_signal",
        "pthread_kill",
        "sigqueue",
        "syscall",
        "qx",
        "readpipe",
        "open2",
        "open3",
        "ipc",
        "pty",
        "ctypes",
        "dlopen",
        "binding",
        "globalthis",
        // Python: code from a string.
        "timeit",
        "cprofile",
        "pdb",
        "runpy",
        "pickle",
        "marshal",
        "multiprocessing",
        "inspect",
        "interactiveinterpreter",
        "interactiveconsole",
        // Node.
        "vm",
        "reflect",
        "constructor",
        "settimeout",
        "setinterval",
        // Ruby, PHP, Lua.
        "send",
        "public_send",
        "__send__",
        "instance_eval",
        "class_eval",
        "const_get",
        "call_user_func",
        "call_user_func_array",
        "assert",
        "posix_kill",
        "strrev",
        "_g",
        "loadstring",
        "dofile",
        // Python's standard library: a command string run through a shell, a command named
        // by the environment (`PAGER`, `MANPAGER`, `BROWSER`, `PYTHONBREAKPOINT`, read by
        // pydoc, `help()`, webbrowser, antigravity, `breakpoint()`), a mailcap entry, Tcl's
        // `exec` (tkinter), code from a string (doctest, profile, trace, bdb).
        "imap4_stream",
        "pipepager",
        "tempfilepager",
        "pydoc",
        "getoutput",
        "getstatusoutput",
        "webbrowser",
        "antigravity",
        "mailcap",
        "breakpoint",
        "breakpointhook",
        "tkinter",
        "_tkinter",
        "doctest",
        "bdb",
        // Python's standard library: a name looked up by a string (`pkgutil.resolve_name`,
        // `string.Formatter().get_field`/`vformat`, logging.config's `()` factory and
        // `fileConfig`'s evaluated `args`, mock's importer, a string annotation evaluated by
        // `get_type_hints`, importlib but its `metadata` and `resources`, an entry point's
        // `load`), objects rebuilt from bytes (copyreg, shelve,
        // dill, cloudpickle, joblib, jsonpickle, YAML's unsafe loaders).
        "resolve_name",
        "pkgutil",
        "get_field",
        "vformat",
        "dictconfig",
        "fileconfig",
        "_importer",
        "_dot_lookup",
        "get_type_hints",
        "forwardref",
        "entrypoint",
        "entry_points",
        "copyreg",
        "shelve",
        "dill",
        "cloudpickle",
        "joblib",
        "jsonpickle",
        "unsafe_load",
        "unsafeloader",
        "full_load",
        "fullloader",
    ]
    .iter()
    .any(|w| has_ident(l, w))
        || l.contains("logging.config")
        || l.match_indices("importlib").any(|(i, m)| {
            let rest = &l[i + m.len()..];
            ![
                ".metadata",
                ".resources",
                " import metadata",
                " import resources",
            ]
            .iter()
            .any(|p| rest.starts_with(p))
        })
        || ["pipes", "profile", "trace"]
            .iter()
            .any(|m| python_imports(l, m))
        || python_star_import(l)
        || l.match_indices("help(").any(|(i, _)| {
            !l[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        })
        || l.contains("&{")
        || l.contains("new function")
        || l.contains("process[")
        || l.contains("${\\")
        || l.contains("/ee")
        || l.contains("os:cmd")
        || l.contains("os[")
        || l.match_indices("require(")
            .chain(l.match_indices("import("))
            .any(|(i, m)| !literal_call(&l[i + m.len()..]))
        || (has_ident(l, "open") && l.contains('|'))
        || (socket_code(l) && !file_name_like(l))
}

/// Code that compiles a string into code without `eval`/`exec`: Node's `Module._compile`,
/// `require("module")` (`createRequire`, `wrap`), `Function(...)`; Python's builtin
/// `compile(...)`, `codeop`, `types.FunctionType`/`CodeType`, `__code__`.
fn code_from_string(t: &str) -> bool {
    let l = t.to_ascii_lowercase();
    [
        "_compile",
        "codeop",
        "compile_command",
        "functiontype",
        "codetype",
        "lambdatype",
        "__code__",
        "createrequire",
    ]
    .iter()
    .any(|w| has_ident(&l, w))
        || ["\"module\"", "'module'", "`module`", "node:module"]
            .iter()
            .any(|m| l.contains(m))
        || t.contains("Function(")
        || t.match_indices("compile(").any(|(i, _)| {
            !t[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        })
}

/// Code hidden in string escapes (`"\x72\x65..."`, `\u0072`, `\u{72}`, octal `\162`): the
/// escapes decoded, the text is judged again as code ([`suspicious_code`], [`dynamic_code`],
/// [`code_from_string`]).
fn escaped_code(t: &str) -> bool {
    if !t.contains('\\') {
        return false;
    }
    let c: Vec<char> = t.chars().collect();
    let mut out = String::new();
    let mut k = 0;
    let hex = |s: &[char]| -> Option<char> {
        u32::from_str_radix(&s.iter().collect::<String>(), 16)
            .ok()
            .and_then(char::from_u32)
    };
    let mut decoded = false;
    while k < c.len() {
        if c[k] == '\\' && k + 1 < c.len() {
            let n = c[k + 1];
            if n == 'x' && k + 4 <= c.len() {
                if let Some(ch) = hex(&c[k + 2..k + 4]) {
                    out.push(ch);
                    k += 4;
                    decoded = true;
                    continue;
                }
            } else if n == 'u' && c.get(k + 2) == Some(&'{') {
                if let Some(e) = c[k + 3..].iter().position(|x| *x == '}')
                    && let Some(ch) = hex(&c[k + 3..k + 3 + e])
                {
                    out.push(ch);
                    k += 4 + e;
                    decoded = true;
                    continue;
                }
            } else if n == 'u' && k + 6 <= c.len() {
                if let Some(ch) = hex(&c[k + 2..k + 6]) {
                    out.push(ch);
                    k += 6;
                    decoded = true;
                    continue;
                }
            } else if n.is_digit(8) {
                let e = (k + 1..(k + 4).min(c.len()))
                    .take_while(|&j| c[j].is_digit(8))
                    .last()
                    .unwrap_or(k + 1);
                let s: String = c[k + 1..=e].iter().collect();
                if let Some(ch) = u32::from_str_radix(&s, 8).ok().and_then(char::from_u32) {
                    out.push(ch);
                    k = e + 1;
                    decoded = true;
                    continue;
                }
            }
        }
        out.push(c[k]);
        k += 1;
    }
    decoded
        && (suspicious_code(&out)
            || dynamic_code(&out.to_ascii_lowercase())
            || code_from_string(&out))
}

/// Perl code that loads a module (`use M`, `no M`, `require M`) not in
/// `PERL_HARMLESS_MODULES`: `use TAP::Parser` gives it `exec` under another name. A version
/// (`use 5.010`, `use v5.36`) is no module; `IO::File`, `IO::Handle` and `FileHandle` pass.
fn perl_unknown_use(t: &str) -> bool {
    ["use", "no", "require"].iter().any(|kw| {
        t.match_indices(kw).any(|(i, _)| {
            let before = t[..i].chars().next_back();
            if before.is_some_and(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '$' | '>' | '@' | '%' | '&')
            }) {
                return false;
            }
            // `use` and `no` are statements; `require` is also an expression.
            let statement = t[..i]
                .trim_end()
                .chars()
                .next_back()
                .is_none_or(|c| matches!(c, ';' | '{' | '}'));
            if *kw != "require" && !statement {
                return false;
            }
            let rest = &t[i + kw.len()..];
            if !rest.starts_with(char::is_whitespace) {
                return false;
            }
            let rest = rest.trim_start();
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            if name.is_empty() {
                // `require $x`, `require "x.pl"`: a file or a name only known at run time.
                return *kw == "require" && !rest.starts_with(['(', ';']) && !rest.is_empty();
            }
            let version = name.starts_with(|c: char| c.is_ascii_digit())
                || (name.starts_with('v') && name[1..].starts_with(|c: char| c.is_ascii_digit()));
            // `IO::File`/`FileHandle` open files: their `new`/`open` are judged by
            // `perl_runtime_open`.
            !version
                && !PERL_HARMLESS_MODULES.contains(&name.as_str())
                && !matches!(name.as_str(), "IO::File" | "IO::Handle" | "FileHandle")
        })
    })
}

/// Modules Perl may load by `-M`/`-m`: pragmas and libraries that start no process and
/// reach no name given as a string. `POSIX` is not one (it has `POSIX::system`, and re-exports
/// core functions): only `-MPOSIX=f,...` naming functions of `POSIX_HARMLESS` is allowed.
const PERL_HARMLESS_MODULES: &[&str] = &[
    "strict",
    "warnings",
    "utf8",
    "feature",
    "integer",
    "constant",
    "vars",
    "bigint",
    "bignum",
    "bigrat",
    "open",
    "English",
    "Carp",
    "List::Util",
    "Scalar::Util",
    "Data::Dumper",
    "JSON::PP",
    "Getopt::Long",
    "Getopt::Std",
    "File::Basename",
    "File::Spec",
    "File::Spec::Functions",
    "File::Path",
    "File::Temp",
    "File::Find",
    "File::Copy",
    "Cwd",
    "Time::HiRes",
    "Time::Local",
    "Time::Piece",
    "Text::Wrap",
    "Text::ParseWords",
    "Text::Tabs",
    "Encode",
    "MIME::Base64",
    "Digest::MD5",
    "Digest::SHA",
    "Math::BigInt",
    "Math::BigFloat",
    "Math::Trig",
    "Term::ANSIColor",
    "Unicode::Normalize",
    "charnames",
    "Sys::Hostname",
];

/// POSIX functions `-MPOSIX=...` may import: arithmetic, time and limits.
const POSIX_HARMLESS: &[&str] = &[
    "floor",
    "ceil",
    "fmod",
    "strftime",
    "mktime",
    "difftime",
    "strtol",
    "strtod",
    "round",
    "trunc",
    "INT_MAX",
    "INT_MIN",
    "UINT_MAX",
    "DBL_MAX",
    "DBL_MIN",
    "FLT_MAX",
    "LONG_MAX",
    "LONG_MIN",
    "EXIT_SUCCESS",
    "EXIT_FAILURE",
    "isatty",
    "setlocale",
    "LC_ALL",
    "LC_NUMERIC",
    "LC_CTYPE",
    "LC_TIME",
];

/// Libraries Ruby may load by `-r`: none defines a method that starts a process (Rake's `sh`,
/// un.rb's `httpd`, `debug`'s command loop are why this is a list).
const RUBY_HARMLESS_MODULES: &[&str] = &[
    "json",
    "set",
    "yaml",
    "psych",
    "pp",
    "prettyprint",
    "date",
    "time",
    "csv",
    "digest",
    "digest/md5",
    "digest/sha1",
    "digest/sha2",
    "securerandom",
    "base64",
    "optparse",
    "pathname",
    "stringio",
    "bigdecimal",
    "English",
    "fileutils",
    "tempfile",
    "tmpdir",
    "uri",
    "zlib",
    "logger",
    "ostruct",
    "matrix",
    "prime",
    "etc",
    "rbconfig",
];

/// Node preloads that only compile or set `process.env`: the TypeScript loaders and dotenv.
const NODE_HARMLESS_MODULES: &[&str] = &[
    "dotenv/config",
    "ts-node/register",
    "ts-node/register/transpile-only",
    "tsx",
    "tsx/cjs",
    "tsx/esm",
    "source-map-support/register",
];

/// A module an interpreter loads by option that may give the code the guard reads a function
/// with an innocent name that starts a process (`perl -MIPC::Cmd=run -e 'run(...)'`, `ruby
/// -rrake -e 'sh ...'`, `node -r zx/globals -e '$(...)'`): Perl's `-M`/`-m` (also `-M-`,
/// `-MFoo=a,b`, in a cluster, after `-e`) and Ruby's `-r` must name a module of their
/// allowlist; `perl -d` (the debugger runs commands from its input, and `PERL5DB`) is denied.
/// Node's `-r`/`--require`/`--import`/`--loader` (and Bun's `--preload`) are judged only when
/// the guard reads the program (`-e`/`-p` or a here-string): with a script file, the script is
/// unread anyway.
fn unknown_module(stem: &str, rest: &[Word], code_read: bool) -> Option<String> {
    let mut modules: Vec<&str> = Vec::new();
    match stem {
        "perl" => {
            let mut k = 0;
            while k < rest.len() {
                let t = rest[k].text.as_str();
                if t == "--" || !t.starts_with('-') || t == "-" {
                    break;
                }
                let cs: Vec<char> = t[1..].chars().collect();
                let mut j = 0;
                let mut takes_next = false;
                while j < cs.len() {
                    match cs[j] {
                        'M' | 'm' => {
                            let m: String = cs[j + 1..].iter().collect();
                            let name = m.strip_prefix('-').unwrap_or(&m);
                            let end = name
                                .find(|c: char| {
                                    !(c.is_ascii_alphanumeric() || c == '_' || c == ':')
                                })
                                .unwrap_or(name.len());
                            let (name, args) = name.split_at(end);
                            let plain_args = args.is_empty()
                                || args.strip_prefix('=').is_some_and(|a| {
                                    a.chars().all(|c| {
                                        c.is_ascii_alphanumeric()
                                            || matches!(
                                                c,
                                                '_' | ',' | ':' | '-' | '(' | ')' | '$' | '@' | '%'
                                            )
                                    })
                                });
                            let posix = name == "POSIX"
                                && args.strip_prefix('=').is_some_and(|a| {
                                    a.split(',').all(|f| POSIX_HARMLESS.contains(&f))
                                });
                            if !plain_args || !(posix || PERL_HARMLESS_MODULES.contains(&name)) {
                                return Some(format!(
                                    "loads the module `{m}` (`-M`/`-m`), which is not known to \
                                     be harmless: its functions can start processes under \
                                     innocent names"
                                ));
                            }
                            break;
                        }
                        'd' => {
                            return Some(
                                "runs the debugger (`-d`), which runs commands from its input \
                                 and `PERL5DB`"
                                    .into(),
                            );
                        }
                        'l' | '0' => {
                            j += 1;
                            while j < cs.len() && (cs[j].is_ascii_hexdigit() || cs[j] == 'x') {
                                j += 1;
                            }
                        }
                        'C' => {
                            j += 1;
                            while j < cs.len()
                                && (cs[j].is_ascii_digit() || "IOEioeSDALa".contains(cs[j]))
                            {
                                j += 1;
                            }
                        }
                        'e' | 'E' => {
                            takes_next = j + 1 == cs.len();
                            break;
                        }
                        'a' | 'c' | 'n' | 'p' | 's' | 't' | 'T' | 'u' | 'U' | 'v' | 'w' | 'W'
                        | 'X' | 'S' | 'h' | 'f' => j += 1,
                        _ => break,
                    }
                }
                k += 1 + usize::from(takes_next);
            }
        }
        "ruby" | "irb" => {
            let mut k = 0;
            while k < rest.len() {
                let t = rest[k].text.as_str();
                if t == "--" || !t.starts_with('-') || t == "-" {
                    break;
                }
                let mut takes_next = false;
                if let Some(m) = t.strip_prefix("--require=") {
                    modules.push(m);
                } else if t == "--require" {
                    if let Some(m) = rest.get(k + 1) {
                        modules.push(&m.text);
                    }
                    takes_next = true;
                } else if !t.starts_with("--") {
                    for (j, c) in t.char_indices().skip(1) {
                        match c {
                            'r' => {
                                let m = &t[j + 1..];
                                if m.is_empty() {
                                    if let Some(m) = rest.get(k + 1) {
                                        modules.push(&m.text);
                                    }
                                    takes_next = true;
                                } else {
                                    modules.push(m);
                                }
                                break;
                            }
                            'e' | 'C' | 'E' | 'I' => {
                                takes_next = j + 1 == t.len();
                                break;
                            }
                            'a' | 'c' | 'd' | 'l' | 'n' | 'p' | 's' | 'S' | 'v' | 'w' | 'y' => {}
                            _ => break,
                        }
                    }
                }
                k += 1 + usize::from(takes_next);
            }
            if let Some(m) = modules.iter().find(|m| !RUBY_HARMLESS_MODULES.contains(m)) {
                return Some(format!(
                    "loads the library `{m}` (`-r`), which is not known to be harmless: its \
                     methods can start processes under innocent names"
                ));
            }
        }
        "node" | "nodejs" | "bun" if code_read => {
            let opts = [
                "-r",
                "--require",
                "--import",
                "--loader",
                "--experimental-loader",
                "--preload",
            ];
            for (k, w) in rest.iter().enumerate() {
                let t = w.text.as_str();
                if opts.contains(&t) {
                    if let Some(m) = rest.get(k + 1) {
                        modules.push(&m.text);
                    }
                } else if let Some((o, m)) = t.split_once('=')
                    && opts.contains(&o)
                {
                    modules.push(m);
                } else if let Some(m) = t.strip_prefix("-r").filter(|m| !m.is_empty()) {
                    modules.push(m);
                }
            }
            if let Some(m) = modules.iter().find(|m| !NODE_HARMLESS_MODULES.contains(m)) {
                return Some(format!(
                    "preloads `{m}` for code the guard reads, which is not known to be harmless: \
                     it can give that code functions that start processes under innocent names"
                ));
            }
        }
        _ => {}
    }
    None
}

/// The sqlite3 shell (and DuckDB's, its fork) runs a command for a dot-command's file name
/// that starts with `|` (`.read`, `.once`, `.output`, `.import`, `.log`, `.trace`, ...), for
/// `.once`/`.output` given `-e`/`-x` (`$VISUAL`/`$EDITOR` or a viewer), `.excel`, `.www`, the
/// abbreviations of `.shell`/`.system` (`.sys`), and SQL's `edit(text, editor)`. Its commands
/// are its arguments (`-cmd` values included) and, with no SQL among them, its stdin: a
/// here-string or here-document is judged line by line, a pipe is denied.
fn sqlite_runs_command(
    base: &str,
    rest: &[Word],
    input: &Input,
    stdin: Option<&str>,
) -> Option<String> {
    if !matches!(base, "sqlite3" | "sqlite" | "duckdb") {
        return None;
    }
    let why = |what: &str| {
        Some(format!(
            "`{base}` {what}; the guard cannot see what it runs"
        ))
    };
    // Positional words: the database, then SQL or dot-commands (stdin is not read then).
    let takes_value = |w: &str| {
        matches!(
            w.trim_start_matches('-'),
            "cmd"
                | "init"
                | "separator"
                | "newline"
                | "nullvalue"
                | "vfs"
                | "mmap"
                | "lookaside"
                | "pagecache"
                | "heap"
                | "maxsize"
                | "escape"
        )
    };
    let mut positional = 0;
    let mut k = 0;
    while k < rest.len() {
        let t = rest[k].text.as_str();
        if t.starts_with('-') {
            k += usize::from(takes_value(t));
        } else {
            positional += 1;
        }
        k += 1;
    }
    let reads_stdin = positional < 2;
    if reads_stdin && matches!(input, Input::Pipe) {
        return why("reads its commands from a pipe");
    }
    let stdin_text = stdin.filter(|_| reads_stdin && matches!(input, Input::Text(_)));
    let texts = rest.iter().map(|w| w.text.as_str()).chain(stdin_text);
    for text in texts {
        let l = text.to_ascii_lowercase();
        let edit = l.match_indices("edit").any(|(i, m)| {
            let before = l[..i].chars().next_back();
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                && l[i + m.len()..].trim_start().starts_with('(')
        });
        if edit {
            return why("runs an editor command (`edit()`)");
        }
        for line in l.lines() {
            let Some(cmd) = line.trim_start().strip_prefix('.') else {
                continue;
            };
            let args = sqlite_dot_args(cmd);
            let Some((name, args)) = args.split_first() else {
                continue;
            };
            let abbrev = |full: &str| name.len() >= 2 && full.starts_with(name.as_str());
            if abbrev("shell") || abbrev("system") {
                return why("runs a shell command (`.shell`/`.system`)");
            }
            if abbrev("excel") || name.starts_with("ww") {
                return why("starts a viewer (`.excel`, `.www`)");
            }
            if (name.starts_with('o') && (abbrev("once") || abbrev("output") || name == "o"))
                && args.iter().any(|a| a.starts_with('-') && a != "--bom")
            {
                return why("starts an editor or a viewer (`.once -e`/`-x`)");
            }
            if !abbrev("separator") && args.iter().any(|a| a.trim_start().starts_with('|')) {
                return why("runs a command given as a `|` file name");
            }
        }
    }
    None
}

/// PostgreSQL's and MySQL's/MariaDB's clients run shell commands from their input: psql's
/// `\!`, a `|command` for `\o`/`\g`/`\gx`/`\w`, `\copy ... program`, backquotes in a
/// meta-command's arguments, the editor (`\e`, `\ef`, `\ev`); mysql's `\!`/`system`,
/// `\P`/`pager`, `\e`/`edit`, `--pager`, and a client plugin loaded from a directory
/// (`--plugin-dir`, `--default-auth`). Any argument, and a here-string or here-document, is
/// judged; a pipe into one that reads its stdin is denied.
fn sql_client_runs_command(
    base: &str,
    rest: &[Word],
    input: &Input,
    stdin: Option<&str>,
) -> Option<String> {
    let psql = base == "psql";
    if !psql && !matches!(base, "mysql" | "mariadb") {
        return None;
    }
    let runs = |t: &str| {
        let l = t.to_ascii_lowercase();
        let meta = t.contains("\\!")
            || t.contains('`')
            || (t.contains('\\') && t.contains('|'))
            || has_ident(&l, "program")
            || t.split('\\').skip(1).any(|m| {
                matches!(
                    m.split_whitespace().next(),
                    Some("e" | "ef" | "ev" | "edit" | "P")
                )
            });
        let client = !psql
            && l.split([';', '\n']).any(|st| {
                matches!(
                    st.split_whitespace().next(),
                    Some("system" | "pager" | "edit" | "\\!" | "\\p" | "\\e")
                )
            });
        let option = !psql
            && ["--pager", "--plugin-dir", "--default-auth", "--plugin"]
                .iter()
                .any(|o| l.starts_with(o));
        meta || client || option
    };
    let inline = rest.iter().any(|w| {
        matches!(w.text.as_str(), "-c" | "-e" | "--command" | "--execute")
            || w.text.starts_with("--command=")
            || w.text.starts_with("--execute=")
    });
    let code_flag = |t: &str| {
        matches!(t, "-c" | "-e" | "--command" | "--execute")
            || ["-c", "-e", "--command=", "--execute="]
                .iter()
                .any(|f| t.starts_with(f))
    };
    let dynamic_code = rest
        .iter()
        .enumerate()
        .any(|(k, w)| w.dynamic && (code_flag(&w.text) || k > 0 && code_flag(&rest[k - 1].text)));
    if dynamic_code || rest.iter().any(|w| runs(&w.text)) || stdin.is_some_and(runs) {
        Some(format!(
            "`{base}` is given a client command that runs a shell command (`\\!`, `system`, \
             a pager, an editor, `|command`, `program`, a plugin); the guard cannot see what it runs"
        ))
    } else if !inline && matches!(input, Input::Pipe) {
        Some(format!(
            "`{base}` reads client commands from a pipe; the guard cannot see what it runs"
        ))
    } else {
        None
    }
}

/// A sqlite3 dot-command's words as its shell splits them: at blanks, with `'...'` and
/// `"..."` quoting (the quotes dropped).
fn sqlite_dot_args(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote = None;
    let mut started = false;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                started = true;
            }
            None if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            None => {
                cur.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(cur);
    }
    out
}

/// Python modules a line of inline code that writes a file may import first (before any other
/// statement): the standard library's, none of them loaded again from the file written.
const PY_PLAIN_IMPORTS: &[&str] = &[
    "sys",
    "os",
    "json",
    "re",
    "math",
    "time",
    "datetime",
    "pathlib",
    "collections",
    "itertools",
    "functools",
    "random",
    "base64",
    "binascii",
    "hashlib",
    "struct",
    "io",
    "csv",
    "textwrap",
    "shutil",
    "tempfile",
    "glob",
    "zlib",
    "gzip",
    "typing",
    "dataclasses",
    "enum",
    "decimal",
    "fractions",
    "statistics",
    "uuid",
    "argparse",
    "array",
];

/// Node's built-in modules a line of inline code that writes a file may `require` by literal
/// name: none is read from the file system.
const NODE_PLAIN_MODULES: &[&str] = &[
    "fs",
    "fs/promises",
    "path",
    "os",
    "util",
    "crypto",
    "zlib",
    "buffer",
    "events",
    "stream",
    "url",
    "assert",
    "querystring",
    "readline",
    "string_decoder",
    "timers",
    "perf_hooks",
];

/// Ruby libraries a line of inline code that writes a file may `require` by literal name.
fn ruby_plain_require(rest: &str) -> bool {
    let rest = rest.trim_start().trim_start_matches('(').trim_start();
    let Some(q) = rest.chars().next().filter(|c| matches!(c, '\'' | '"')) else {
        return false;
    };
    rest[1..]
        .split(q)
        .next()
        .is_some_and(|name| RUBY_HARMLESS_MODULES.contains(&name))
}

/// Inline code (lowercase) that writes a file: a write call of Python, Node, Ruby, PHP, Lua or
/// Perl, a copy, a rename, or `open` and a mode that writes (`"w"`, `'ab'`, `"r+"`, `">"`,
/// `'+<'`).
fn writes_file(l: &str) -> bool {
    [
        ".write(",
        ":write(",
        "write_bytes",
        "write_text",
        "writefile",
        "writetextfile",
        "createwritestream",
        "appendfile",
        "copyfile",
        "cpsync",
        "shutil.",
        "binwrite",
        "fileutils",
        "file_put_contents",
        "fwrite",
        "fputs",
        "syswrite",
        "sysopen",
        "symlink",
        "rename",
        "copy(",
        "os.replace",
        "os.link",
        "tofile",
        "bun.write",
        "io.output",
    ]
    .iter()
    .any(|w| l.contains(w))
        || (has_ident(l, "open")
            && ['"', '\''].iter().any(|&q| {
                l.split(q).skip(1).step_by(2).any(|m| {
                    let mode = m.trim_start();
                    mode.starts_with('>')
                        || mode.starts_with("+<")
                        || (!m.is_empty()
                            && m.len() <= 3
                            && m.chars().all(|c| "rwabxt+".contains(c))
                            && m.contains(['w', 'a', 'x', '+']))
                })
            }))
}

/// Inline code (lowercase) that loads code from a file (`stem`: the interpreter): Python's
/// `import` but a leading one of [`PY_PLAIN_IMPORTS`], `sys.path`, `importlib`; Node's
/// `require`/`import(` but of a built-in by literal name, a worker, a module path; Perl's
/// `require`, `do FILE`, `use lib`, `@INC`; Ruby's `require`/`load` but of
/// [`RUBY_HARMLESS_MODULES`]; PHP's `include`/`require`; Lua's `require`/`loadfile`; for
/// other interpreters, any of those words.
fn loads_code(stem: &str, l: &str) -> bool {
    let anywhere = [
        "sys.path",
        "importlib",
        "__import__",
        "addsitedir",
        "run_path",
        "zipimport",
        "exec(",
        "execfile",
        "@inc",
        "%inc",
        "use lib",
        "$:",
        "$load_path",
        "package.path",
        "package.cpath",
        "package.loaders",
        "package.searchers",
        "module.paths",
        "module._",
        "require.cache",
        "node_path",
        "worker",
    ];
    if anywhere.iter().any(|w| l.contains(w)) {
        return true;
    }
    let ident_at = |w: &str| -> Vec<usize> {
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        l.match_indices(w)
            .filter(|(i, _)| {
                !ident(l[..*i].chars().next_back()) && !ident(l[i + w.len()..].chars().next())
            })
            .map(|(i, _)| i)
            .collect()
    };
    match stem {
        "python" | "pypy" => {
            let mut leading = true;
            l.split([';', '\n']).any(|st| {
                let st = st.trim();
                let names = st
                    .strip_prefix("import ")
                    .map(|n| n.to_string())
                    .or_else(|| {
                        st.strip_prefix("from ")
                            .map(|f| f.split(" import").next().unwrap_or("").to_string())
                    });
                match names {
                    Some(n) if leading => !n.split(',').all(|m| {
                        let root = m.trim().split(['.', ' ']).next().unwrap_or("");
                        PY_PLAIN_IMPORTS.contains(&root)
                    }),
                    _ => {
                        if !st.is_empty() {
                            leading = false;
                        }
                        has_ident(st, "import")
                    }
                }
            })
        }
        "node" | "nodejs" | "deno" | "bun" => ["require", "import"].iter().any(|w| {
            ident_at(w).into_iter().any(|i| {
                let rest = l[i + w.len()..].trim_start();
                let Some(arg) = rest.strip_prefix('(') else {
                    return *w == "import";
                };
                let arg = arg.trim_start();
                let Some(q) = arg.chars().next().filter(|c| matches!(c, '\'' | '"' | '`')) else {
                    return true;
                };
                let name = arg[1..].split(q).next().unwrap_or("");
                !literal_call(arg)
                    || !NODE_PLAIN_MODULES.contains(&name.strip_prefix("node:").unwrap_or(name))
            })
        }),
        "perl" => {
            !ident_at("require").is_empty()
                || ident_at("do")
                    .into_iter()
                    .any(|i| !l[i + 2..].trim_start().starts_with('{'))
        }
        "ruby" | "irb" => ["require", "require_relative", "load", "autoload"]
            .iter()
            .any(|w| {
                ident_at(w)
                    .into_iter()
                    .any(|i| *w != "require" || !ruby_plain_require(&l[i + w.len()..]))
            }),
        _ => [
            "import",
            "require",
            "require_once",
            "include",
            "include_once",
            "load",
            "loadfile",
            "source",
            "do",
            "use",
        ]
        .iter()
        .any(|w| !ident_at(w).is_empty()),
    }
}

/// Inline code that writes a file and loads code (rule 6 inside one program): the file it
/// wrote, with content the guard cannot read, may be what it loads.
fn self_loading_code(stem: &str, t: &str) -> bool {
    let l = t.to_ascii_lowercase();
    writes_file(&l) && loads_code(stem, &l)
}

/// The arguments of a Perl call starting at `rest` (after `open`, `->new`): split at commas
/// outside quotes and brackets, up to the call's `)` or, without parentheses, a `;`.
fn perl_call_args(rest: &str) -> Vec<String> {
    let rest = rest.trim_start();
    let (paren, body) = match rest.strip_prefix('(') {
        Some(b) => (true, b),
        None => (false, rest),
    };
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                cur.push(c);
                while let Some(d) = chars.next() {
                    cur.push(d);
                    if d == '\\' {
                        if let Some(e) = chars.next() {
                            cur.push(e);
                        }
                    } else if d == c {
                        break;
                    }
                }
                continue;
            }
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth > 0 => depth -= 1,
            ')' | ']' | '}' if paren => break,
            ';' | '\n' if depth == 0 => break,
            ',' if depth == 0 => {
                args.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        args.push(cur.trim().to_string());
    }
    args
}

/// A Perl string literal's text (`'<'`, `"<$f"`, `">" or die`) and whether it interpolates;
/// `None` for anything else (a variable, a call, a concatenation).
fn perl_literal(arg: &str) -> Option<(&str, bool)> {
    let q = arg.chars().next().filter(|c| matches!(c, '\'' | '"'))?;
    let end = arg[1..].find(q)? + 1;
    let after = arg[end + 1..].trim_start();
    (after.is_empty()
        || ["or ", "||", "and ", "&&"]
            .iter()
            .any(|p| after.starts_with(p)))
    .then(|| (&arg[1..end], q == '"'))
}

/// Whether the arguments of a Perl `open` (without the handle) name a file opened with a
/// literal mode: one literal starting with `<`, `>` or `+` (its mode), or a literal mode of
/// `<`/`>`/`+` without interpolation and the file; no `|` either way.
fn perl_open_args_plain(args: &[String]) -> bool {
    let mode_ok = |m: &str| m.trim_start().starts_with(['<', '>', '+']) && !m.contains('|');
    match args {
        [] => false,
        [one] => perl_literal(one).is_some_and(|(m, _)| mode_ok(m)),
        [mode, ..] => perl_literal(mode)
            .is_some_and(|(m, interp)| mode_ok(m) && !(interp && m.contains(['$', '@']))),
    }
}

/// Perl code (lowercase) whose `open` may run a command the guard cannot read: an `open` (or
/// `IO::File`/`FileHandle` `new`/`open`) whose mode or two-argument spec is not a literal
/// naming `<`, `>` or `+` without `|` (`open(F, $c)`, `open(F, pack("H*", ...))`, a
/// one-argument `open`), or `IO::Pipe`.
fn perl_runtime_open(l: &str) -> bool {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    l.contains("io::pipe")
        || l.match_indices("open").any(|(i, m)| {
            let before = &l[..i];
            let rest = &l[i + m.len()..];
            if ident(before.chars().next_back()) || ident(rest.chars().next()) {
                return false;
            }
            let method = before.ends_with("->");
            // `use open qw(:std :utf8)`: the pragma.
            let pragma = before.trim_end();
            if [" use", ";use", " no", ";no"]
                .iter()
                .any(|p| pragma.ends_with(p))
                || matches!(pragma, "use" | "no")
            {
                return false;
            }
            let start = rest.trim_start().chars().next();
            if !method
                && !start
                    .is_some_and(|c| c == '(' || c == '$' || c == '*' || c.is_ascii_alphabetic())
            {
                return false;
            }
            let args = perl_call_args(rest);
            if method {
                !perl_open_args_plain(&args)
            } else {
                args.is_empty() || !perl_open_args_plain(&args[1..])
            }
        })
        || ["io::file", "filehandle"].iter().any(|c| {
            l.match_indices(&format!("{c}->new")).any(|(i, m)| {
                let args = perl_call_args(&l[i + m.len()..]);
                !args.is_empty() && !perl_open_args_plain(&args)
            })
        })
}

/// Perl code that calls a sub whose name or reference is only known when it runs: through a
/// scalar or an expression (`&$f`, `& $f`, `&{...}`, `goto &$f`, `$f->(...)`, `$x{f}->()`),
/// a method named by a variable (`POSIX->$m(...)`), `can(` (a reference by name), or a glob
/// assigned from a string or a symbol-table lookup (`*x = "POSIX::sys"."tem"`, `*{"..."}`,
/// `$POSIX::{...}`). `"POSIX::sys"."tem"` then calls `system` under no name the guard reads.
fn perl_symbolic_call(t: &str) -> bool {
    let b = t.as_bytes();
    let amp_call = b.iter().enumerate().any(|(i, &c)| {
        c == b'&'
            && (i == 0 || !matches!(b[i - 1], b'&' | b'$'))
            && b.get(i + 1) != Some(&b'&')
            && b[i + 1..]
                .iter()
                .find(|c| !c.is_ascii_whitespace())
                .is_some_and(|c| matches!(c, b'$' | b'{' | b'*'))
    });
    let glob_assign = b.iter().enumerate().any(|(i, &c)| {
        c == b'*' && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'*')) && {
            let rest = &t[i + 1..];
            let name_end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            let after = rest[name_end..].trim_start();
            rest.starts_with('{')
                || (name_end > 0 && after.starts_with('=') && !after.starts_with("=="))
        }
    });
    amp_call
        || glob_assign
        || t.contains("->(")
        || t.contains("->$")
        || t.contains("->&")
        || t.contains("::{")
        || has_ident(t, "can")
        || has_ident(t, "DOES")
}

/// Ruby code that reaches a method by a name it builds at run time: `method(`,
/// `instance_method`, `public_method`, `singleton_method`, `define_method`, `alias_method`,
/// `to_proc`, `to_sym`/`intern` (a symbol from a string), `bind_call`, `instance_exec`,
/// `module_eval`, and a symbol that interpolates (`:"sys#{x}"`, `%I[...]`).
/// `Kernel.method("sys"+"tem").call(...)` calls `system` under no name the guard reads.
fn ruby_reflective_call(t: &str) -> bool {
    [
        "method",
        "methods",
        "instance_method",
        "public_method",
        "public_instance_method",
        "singleton_method",
        "define_method",
        "define_singleton_method",
        "alias_method",
        "method_missing",
        "to_proc",
        "to_sym",
        "intern",
        "bind",
        "bind_call",
        "instance_exec",
        "module_eval",
        "module_exec",
        "class_exec",
    ]
    .iter()
    .any(|w| has_ident(t, w))
        || (t.contains(":\"") && t.contains("#{"))
        || t.contains("%I")
}

/// A git subcommand option whose value git runs as a program: `send-email`'s
/// `--sendmail-cmd`, `--to-cmd`, `--cc-cmd`, `--header-cmd` and `--smtp-server` naming a path
/// (a sendmail-like program), `clone -u` (the `--upload-pack` short form), `--template` of
/// `clone`/`init` (its hooks run), `daemon --access-hook`, `instaweb` (`--httpd`, `--browser`)
/// and `web--browse`.
fn git_program_option(rest: &[Word]) -> bool {
    let sub = |s: &str| rest.iter().any(|w| w.text == s);
    let opt = |o: &str| {
        rest.iter()
            .any(|w| w.text == o || w.text.strip_prefix(o).is_some_and(|v| v.starts_with('=')))
    };
    let smtp_program = rest.iter().enumerate().any(|(k, w)| {
        let v = match w.text.strip_prefix("--smtp-server=") {
            Some(v) => Some((v, w.dynamic)),
            None if w.text == "--smtp-server" => {
                rest.get(k + 1).map(|n| (n.text.as_str(), n.dynamic))
            }
            None => None,
        };
        v.is_some_and(|(v, dynamic)| dynamic || v.contains('/') || v.starts_with('~'))
    });
    (sub("send-email")
        && (smtp_program
            || ["--sendmail-cmd", "--to-cmd", "--cc-cmd", "--header-cmd"]
                .iter()
                .any(|o| opt(o))))
        || (sub("clone")
            && rest.iter().any(|w| {
                w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('u')
            }))
        || ((sub("clone") || sub("init")) && opt("--template"))
        || (sub("daemon") && opt("--access-hook"))
        || sub("instaweb")
        || sub("web--browse")
}

/// Whether Python code (lowercase) imports the module `m` (`import m`, `import os, m as x`,
/// `from m import f`): for modules whose names are ordinary words (`pipes`, `profile`,
/// `trace`), which as identifiers alone would deny too much.
fn python_imports(l: &str, m: &str) -> bool {
    l.split([';', '\n', ':']).any(|st| {
        let st = st.trim();
        let root = |n: &str| n.trim().split(['.', ' ']).next() == Some(m);
        if let Some(names) = st.strip_prefix("import ") {
            names.split(',').any(root)
        } else if let Some(from) = st.strip_prefix("from ") {
            root(from)
        } else {
            false
        }
    })
}

/// Python code (lowercase) that star-imports a module with process calls (`from os import *`):
/// its `system`, `exec*`, `spawn*` become plain names that `globals()`, `dir()` or a
/// comprehension can reach by a string built at run time.
fn python_star_import(l: &str) -> bool {
    const PROCESS_MODULES: &[&str] = &[
        "os",
        "posix",
        "nt",
        "subprocess",
        "pty",
        "pipes",
        "commands",
        "popen2",
        "shutil",
        "platform",
        "asyncio",
        "multiprocessing",
        "_posixsubprocess",
    ];
    l.split([';', '\n']).any(|st| {
        let Some(from) = st.trim().strip_prefix("from ") else {
            return false;
        };
        let Some((module, names)) = from.split_once(" import") else {
            return false;
        };
        let root = module.trim().split('.').next().unwrap_or("");
        names
            .trim_start()
            .trim_start_matches('(')
            .trim_start()
            .starts_with('*')
            && PROCESS_MODULES.contains(&root)
    })
}

/// A word that can only be a file name or a path (`tests/test_socket.py`, `Makefile.unix`; not
/// an option, `-rsocket`):
/// given to an interpreter, it names a script or the script's data, whose text the guard does
/// not read, so what it spells says nothing. No code fits: a call or a statement needs a
/// space, a bracket, a quote or a colon.
fn file_name_like(l: &str) -> bool {
    !l.is_empty()
        && !l.starts_with('-')
        && l.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-' | b'+'))
}

/// Code that can open a socket (lowercase text): it can speak tmux's client protocol to the
/// server's socket itself (the path is in `$TMUX`). Python's `socket`/`_socket` (also reached
/// as `http.client.socket`), asyncio's unix connections, Perl's `IO::Socket`/`Socket`/`socket`,
/// Ruby's `UNIXSocket`, PHP's `stream_socket_client`/`fsockopen`, Lua's `socket`, Node's
/// `net`/`tls`/`dgram`, `socketPath`, `createConnection`; Deno's and Bun's `unix`.
fn socket_code(l: &str) -> bool {
    [
        "sock",
        "unix",
        "createconnection",
        "dgram",
        "node:net",
        "node:tls",
        "gen_tcp",
    ]
    .iter()
    .any(|w| l.contains(w))
        || ["net", "tls", "_tls_wrap", "_stream_wrap"].iter().any(|m| {
            [format!("\"{m}\""), format!("'{m}'"), format!("`{m}`")]
                .iter()
                .any(|q| l.contains(q.as_str()))
        })
}

/// gawk's indirect call (`@f(...)`, the function named by a string built at run time) or
/// `@load` of an extension.
fn gawk_indirect(code: &str) -> bool {
    code.match_indices('@').any(|(i, _)| {
        let rest = &code[i + 1..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        !name.is_empty() && (name == "load" || rest[name.len()..].trim_start().starts_with('('))
    })
}

/// Whether `rest` (what follows `require(`) is one plain string literal and `)`.
fn literal_call(rest: &str) -> bool {
    let rest = rest.trim_start();
    let Some(q) = rest.chars().next().filter(|c| matches!(c, '\'' | '"')) else {
        return false;
    };
    let body = &rest[1..];
    body.find(q)
        .is_some_and(|end| body[end + 1..].trim_start().starts_with(')'))
}

/// Tcl commands that run no program, open nothing, load nothing and evaluate no string they
/// are given as code (the scripts and expressions `if`, `while`, `for`, `foreach`, `lmap`,
/// `catch`, `proc` and `expr` take are read by [`tcl_code`]).
const TCL_HARMLESS: &[&str] = &[
    "puts", "set", "unset", "expr", "string", "list", "foreach", "if", "for", "while", "proc",
    "return", "incr", "append", "lappend", "lindex", "llength", "lrange", "linsert", "lreplace",
    "lreverse", "lrepeat", "lassign", "lset", "lsort", "lsearch", "concat", "format", "scan",
    "regexp", "regsub", "split", "join", "break", "continue", "catch", "lmap", "array", "dict",
    "global", "exit", "gets", "flush", "error", "binary",
];

/// A word of Tcl code: `{...}` (no substitution), `"..."` or bare (substituted).
#[derive(Debug)]
enum TclWord {
    Braced(String),
    Quoted(String),
    Bare(String),
}

impl TclWord {
    fn text(&self) -> &str {
        match self {
            TclWord::Braced(t) | TclWord::Quoted(t) | TclWord::Bare(t) => t,
        }
    }
    /// Its value is only known when Tcl runs (a `$`, a `[...]` or a backslash escape).
    fn dynamic(&self) -> bool {
        !matches!(self, TclWord::Braced(_)) && self.text().contains(['$', '[', '\\'])
    }
}

/// Why Tcl code (a here-string given to `tclsh`/`wish`, `expect -c`) may run something the
/// guard cannot see: a command not in [`TCL_HARMLESS`] nor a `proc` of its own, a command
/// name that is not a plain literal (`$c`, `[string cat ex ec]`, `ex\x65c`), `{*}`, a script
/// or expression that is not a literal (`if $x`, `expr $x` evaluate the value again), a
/// `-command` option, or text the reader cannot parse.
fn tcl_code(code: &str) -> Option<String> {
    let c: Vec<char> = code.chars().collect();
    let mut procs = Vec::new();
    let mut i = 0;
    tcl_script(&c, &mut i, false, &mut procs, 0).err()
}

/// Reads commands from `c[*i..]` up to the end (or, `nested`, the `]` that closes a command
/// substitution), judging each.
fn tcl_script(
    c: &[char],
    i: &mut usize,
    nested: bool,
    procs: &mut Vec<String>,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH * 4 {
        return Err("Tcl code nested too deep".into());
    }
    let n = c.len();
    loop {
        while *i < n && (c[*i].is_whitespace() || c[*i] == ';') {
            *i += 1;
        }
        if *i >= n {
            return if nested {
                Err("an unclosed `[` in Tcl code".into())
            } else {
                Ok(())
            };
        }
        if nested && c[*i] == ']' {
            return Ok(());
        }
        if c[*i] == '#' {
            while *i < n && c[*i] != '\n' {
                *i += if c[*i] == '\\' { 2 } else { 1 };
            }
            continue;
        }
        let mut words = Vec::new();
        loop {
            while *i < n
                && (matches!(c[*i], ' ' | '\t') || (c[*i] == '\\' && c.get(*i + 1) == Some(&'\n')))
            {
                *i += if c[*i] == '\\' { 2 } else { 1 };
            }
            if *i >= n || matches!(c[*i], '\n' | ';') || (nested && c[*i] == ']') {
                break;
            }
            match c[*i] {
                '{' => {
                    if c[*i..].starts_with(&['{', '*', '}']) {
                        return Err("`{*}` makes words only known when Tcl runs".into());
                    }
                    let end = tcl_close_brace(c, *i)?;
                    words.push(TclWord::Braced(c[*i + 1..end].iter().collect()));
                    *i = end + 1;
                }
                '"' => {
                    let start = *i + 1;
                    *i += 1;
                    while *i < n && c[*i] != '"' {
                        tcl_step(c, i, procs, depth)?;
                    }
                    if *i >= n {
                        return Err("an unclosed `\"` in Tcl code".into());
                    }
                    words.push(TclWord::Quoted(c[start..*i].iter().collect()));
                    *i += 1;
                }
                _ => {
                    let start = *i;
                    while *i < n
                        && !c[*i].is_whitespace()
                        && c[*i] != ';'
                        && !(nested && c[*i] == ']')
                    {
                        tcl_step(c, i, procs, depth)?;
                    }
                    words.push(TclWord::Bare(c[start..*i].iter().collect()));
                }
            }
            // A closing brace or quote must end the word.
            if *i < n
                && !c[*i].is_whitespace()
                && c[*i] != ';'
                && !(nested && c[*i] == ']')
                && !matches!(words.last(), Some(TclWord::Bare(_)))
            {
                return Err("extra characters after a closing brace or quote in Tcl code".into());
            }
        }
        tcl_command(&words, procs, depth)?;
    }
}

/// One character of a substituted word: a backslash pair, `${name}`, or a command
/// substitution `[...]`, read (and judged) as a script.
fn tcl_step(
    c: &[char],
    i: &mut usize,
    procs: &mut Vec<String>,
    depth: usize,
) -> Result<(), String> {
    match c[*i] {
        '\\' => *i += 2,
        '$' if c.get(*i + 1) == Some(&'{') => {
            *i = tcl_close_brace(c, *i + 1)? + 1;
        }
        '[' => {
            *i += 1;
            tcl_script(c, i, true, procs, depth + 1)?;
            *i += 1;
        }
        _ => *i += 1,
    }
    *i = (*i).min(c.len());
    Ok(())
}

/// The `}` that closes the `{` at `c[at]`.
fn tcl_close_brace(c: &[char], at: usize) -> Result<usize, String> {
    let mut depth = 0usize;
    let mut i = at;
    while i < c.len() {
        match c[i] {
            '\\' => i += 1,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Ok(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    Err("an unclosed `{` in Tcl code".into())
}

/// A word Tcl runs as a script: read as one when it is a literal, else denied.
fn tcl_body(w: &TclWord, procs: &mut Vec<String>, depth: usize) -> Result<(), String> {
    if w.dynamic() {
        return Err(format!(
            "`{}` is a Tcl script only known when it runs",
            w.text()
        ));
    }
    let c: Vec<char> = w.text().chars().collect();
    tcl_script(&c, &mut 0, false, procs, depth + 1)
}

/// A word Tcl evaluates as an expression: a braced one is read for `[...]`, one that is not a
/// literal is denied (`expr $x` substitutes the value again).
fn tcl_expr(w: &TclWord, procs: &mut Vec<String>, depth: usize) -> Result<(), String> {
    if w.dynamic() {
        return Err(format!(
            "`{}` is a Tcl expression only known when it runs",
            w.text()
        ));
    }
    let c: Vec<char> = w.text().chars().collect();
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '{' => i = tcl_close_brace(&c, i)? + 1,
            _ => tcl_step(&c, &mut i, procs, depth + 1)?,
        }
    }
    Ok(())
}

/// Judges one Tcl command.
fn tcl_command(words: &[TclWord], procs: &mut Vec<String>, depth: usize) -> Result<(), String> {
    let Some(first) = words.first() else {
        return Ok(());
    };
    let name = match first {
        TclWord::Bare(t)
            if !t.is_empty()
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') =>
        {
            t.trim_start_matches(':')
        }
        _ => {
            return Err(format!(
                "a Tcl command named by `{}`, not a plain literal",
                first.text()
            ));
        }
    };
    let args = &words[1..];
    if procs.iter().any(|p| p == name) {
        return Ok(());
    }
    if !TCL_HARMLESS.contains(&name) {
        return Err(format!(
            "Tcl's `{name}`, not among the commands the guard knows to be harmless"
        ));
    }
    // An option that names a command to call (`lsort -command`, `regsub -command`), given
    // literally or by a value only known at run time.
    let options = match name {
        "lsort" => args.len().saturating_sub(1),
        "lsearch" => args.len().saturating_sub(2),
        "regsub" => args.len(),
        _ => 0,
    };
    for w in &args[..options] {
        let t = w.text();
        if w.dynamic() || t.starts_with("-c") {
            return Err(format!("Tcl's `{name}` given the option `{t}`"));
        }
        if t == "--" || !t.starts_with('-') {
            break;
        }
    }
    match name {
        "proc" => {
            let [pname, _, body] = args else {
                return Err("a Tcl `proc` the guard cannot read".into());
            };
            if pname.dynamic() {
                return Err(format!("a Tcl `proc` named by `{}`", pname.text()));
            }
            procs.push(pname.text().trim_start_matches(':').to_string());
            tcl_body(body, procs, depth)
        }
        "if" => {
            let mut k = 0;
            loop {
                let cond = args.get(k).ok_or("a Tcl `if` without a condition")?;
                tcl_expr(cond, procs, depth)?;
                k += 1;
                if args.get(k).is_some_and(|w| w.text() == "then") {
                    k += 1;
                }
                tcl_body(
                    args.get(k).ok_or("a Tcl `if` without a body")?,
                    procs,
                    depth,
                )?;
                k += 1;
                match args.get(k).map(|w| w.text()) {
                    None => return Ok(()),
                    Some("elseif") => k += 1,
                    Some("else") => {
                        return match &args[k + 1..] {
                            [body] => tcl_body(body, procs, depth),
                            _ => Err("a Tcl `else` the guard cannot read".into()),
                        };
                    }
                    Some(_) => {
                        return match &args[k..] {
                            [body] => tcl_body(body, procs, depth),
                            _ => Err("a Tcl `if` the guard cannot read".into()),
                        };
                    }
                }
            }
        }
        "while" => match args {
            [cond, body] => {
                tcl_expr(cond, procs, depth)?;
                tcl_body(body, procs, depth)
            }
            _ => Err("a Tcl `while` the guard cannot read".into()),
        },
        "for" => match args {
            [start, cond, next, body] => {
                tcl_body(start, procs, depth)?;
                tcl_expr(cond, procs, depth)?;
                tcl_body(next, procs, depth)?;
                tcl_body(body, procs, depth)
            }
            _ => Err("a Tcl `for` the guard cannot read".into()),
        },
        "foreach" | "lmap" => match args.last() {
            Some(body) if args.len() >= 3 => tcl_body(body, procs, depth),
            _ => Err(format!("a Tcl `{name}` the guard cannot read")),
        },
        "catch" => match args.first() {
            Some(body) => tcl_body(body, procs, depth),
            None => Err("a Tcl `catch` without a script".into()),
        },
        "expr" => {
            for w in args {
                tcl_expr(w, procs, depth)?;
            }
            Ok(())
        }
        "dict" | "array" => {
            let sub = args.first().map(|w| (w.text(), w.dynamic()));
            let plain: &[&str] = if name == "dict" {
                &[
                    "get", "set", "create", "exists", "keys", "values", "size", "append",
                    "lappend", "incr", "merge", "remove", "replace", "unset", "info",
                ]
            } else {
                &["get", "set", "names", "size", "exists", "unset"]
            };
            match sub {
                Some((s, false)) if plain.contains(&s) => Ok(()),
                _ => Err(format!(
                    "Tcl's `{name}` with a script or a subcommand the guard does not know"
                )),
            }
        }
        _ => Ok(()),
    }
}

/// A program given a unix socket to connect to: it can speak tmux's client protocol to the
/// server's socket (`printf ... | nc -U "${TMUX%%,*}"`). `curl --unix-socket`/
/// `--abstract-unix-socket` (and `-K`, a config file that may name one), `nc`/`ncat`/`netcat
/// -U`/`--unixsock`, `openssl s_client -unix`, and `socat` with any address but stdio, TCP,
/// UDP and TLS (a bare path is `GOPEN`, which connects to a socket).
fn unix_socket_client(base: &str, rest: &[Word]) -> Option<String> {
    let short = |w: &Word, f: char| {
        w.text.starts_with('-') && !w.text.starts_with("--") && w.text[1..].contains(f)
    };
    let why = |what: &str| {
        Some(format!(
            "{what} connects to a unix socket, which may be tmux's"
        ))
    };
    match base {
        "curl"
            if rest.iter().any(|w| {
                w.text.starts_with("--unix-socket")
                    || w.text.starts_with("--abstract-unix-socket")
                    || w.text.starts_with("--config")
                    || short(w, 'K')
            }) =>
        {
            why("`curl --unix-socket` (or a `-K` config)")
        }
        b if (b == "nc" || b.starts_with("nc.") || b == "ncat" || b == "netcat")
            && rest
                .iter()
                .any(|w| short(w, 'U') || w.text.starts_with("--unixsock")) =>
        {
            why(&format!("`{b} -U`"))
        }
        "openssl" if rest.iter().any(|w| w.text == "-unix") => why("`openssl -unix`"),
        "socat" => {
            let plain = |a: &str| {
                let l = a.to_ascii_lowercase();
                let head = l.split([':', ',']).next().unwrap_or("");
                a == "-"
                    || matches!(
                        head,
                        "stdio" | "stdin" | "stdout" | "stderr" | "-" | "openssl" | "ssl"
                    )
                    || ["tcp", "udp"].iter().any(|p| head.starts_with(p)) && !head.contains("unix")
            };
            rest.iter()
                .filter(|w| !w.text.starts_with('-') || w.text == "-")
                .flat_map(|w| w.text.split("!!"))
                .any(|a| !plain(a))
                .then(|| why("`socat` given an address but stdio, TCP, UDP or TLS"))
                .flatten()
        }
        _ => None,
    }
}

/// Inline interpreter code the guard will not run blind: it mentions tmux, names a tmux
/// command, or starts processes.
fn suspicious_code(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    mentions_tmux(&l)
        || [
            "kill-",
            "killp",
            "killw",
            "respawn",
            "unlink-w",
            "source-f",
            "run-shell",
            "system",
            "exec",
            "spawn",
            "popen",
            "subprocess",
            "fork",
            "`",
            "shell",
            "%x",
            "child_process",
            "proc_open",
            "passthru",
        ]
        .iter()
        .any(|k| l.contains(k))
}

/// Programs that only read and print text: the only company a tmux command may have in a line
/// (rule 5).
const TEXT_FILTERS: &[&str] = &[
    "grep", "egrep", "fgrep", "rg", "head", "tail", "wc", "sort", "uniq", "cut", "tr", "jq", "cat",
    "column", "nl", "tac", "echo", "printf", "true", "false", "test", "[", "[[", "]]", "sed",
    "awk", "gawk", "mawk", "nawk", "xxd", "od", "hexdump", "strings", "sleep", "date", ":",
];

const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "ksh93", "mksh", "pdksh", "ash", "hush", "yash", "fish",
    "rbash", "tcsh", "csh", "posh", "oksh", "loksh", "elvish", "nu", "xonsh", "pwsh",
];

/// An interpreter flag that gives it its program inline: `-c`, `-e`, `-E`, `-r`, `-p`,
/// `--eval`, `--print`, or a cluster ending in one (`perl -ne`, `-lne`).
fn inline_code_flag(w: &str) -> bool {
    matches!(w, "--eval" | "--print" | "--command" | "--exec")
        || (w.starts_with('-')
            && !w.starts_with("--")
            && w.len() >= 2
            && w[1..].chars().all(|c| c.is_ascii_alphabetic())
            && w.ends_with(['c', 'e', 'E', 'r', 'p']))
}

/// Interpreters (by the name without a version suffix: `python3.11` is `python`), and
/// programs that read commands or code from their input the way one does (`gdb`, `ed`,
/// `make`). The thirty-fifth round added `lli` (LLVM IR from stdin), `jrunscript`, `java`
/// (source files, `/dev/stdin` among them), `cpan`, `gdbtui` and a few more.
const INTERPRETERS: &[&str] = &[
    "python",
    "pypy",
    "perl",
    "ruby",
    "irb",
    "node",
    "nodejs",
    "deno",
    "bun",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "expect",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "busybox",
    "Rscript",
    "R",
    "erl",
    "escript",
    "elixir",
    "iex",
    "octave",
    "julia",
    "osascript",
    "guile",
    "racket",
    "sbcl",
    "ghci",
    "runghc",
    "scala",
    "groovy",
    "jshell",
    "swift",
    "sed",
    "gsed",
    "vim",
    "nvim",
    "vi",
    "emacs",
    "ed",
    "ex",
    "gdb",
    "lldb",
    "make",
    "gmake",
    "just",
    "lli",
    "jrunscript",
    "jjs",
    "rhino",
    "java",
    "cpan",
    "gdbtui",
    "gdb-multiarch",
    "cgdb",
    "qjs",
    "ts-node",
    "tsx",
    "gnuplot",
    "ocaml",
    "clisp",
    "gst",
];

fn is_interpreter(base: &str) -> bool {
    let stem = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    INTERPRETERS.contains(&stem)
}

/// Whether an interpreter's program holds a value only known at run time (the thirty-fifth
/// round: `awk "BEGIN{ $(...) }"`, `awk -f "$(...)"`, `python3 -c"$x"`): an option with a
/// run-time value attached (`-c"$x"`, `--eval="$x"`; but awk's `-v`/`-F`, which are data),
/// PHP's `-B`/`-R`/`-E`/`-F` code, and awk's and sed's program: the value of `-f`/`-e`/
/// `--source`/`--expression`/`--file` (and gawk's `-i`/`-E`), else the first word that is no
/// option or option value.
fn runtime_program(stem: &str, rest: &[Word]) -> bool {
    let awk = matches!(stem, "awk" | "gawk" | "mawk" | "nawk");
    let sed = matches!(stem, "sed" | "gsed");
    let data_option = |t: &str| {
        awk && ["-v", "-F", "--assign", "--field-separator"]
            .iter()
            .any(|o| t.starts_with(o))
    };
    if rest
        .iter()
        .any(|w| w.runtime && w.text.starts_with('-') && !data_option(&w.text))
    {
        return true;
    }
    if stem == "php"
        && rest
            .windows(2)
            .any(|p| matches!(p[0].text.as_str(), "-B" | "-R" | "-E" | "-F") && p[1].runtime)
    {
        return true;
    }
    if !(awk || sed) {
        return false;
    }
    let (takes_value, program): (&[&str], &[&str]) = if awk {
        (
            &[
                "-F",
                "-v",
                "-f",
                "-e",
                "-i",
                "-l",
                "-E",
                "-W",
                "--file",
                "--source",
                "--include",
                "--load",
                "--exec",
                "--assign",
                "--field-separator",
            ],
            &[
                "-f",
                "-e",
                "-i",
                "-E",
                "--file",
                "--source",
                "--include",
                "--exec",
            ],
        )
    } else {
        (
            &["-e", "-f", "-l", "--expression", "--file", "--line-length"],
            &["-e", "-f", "--expression", "--file"],
        )
    };
    let mut given = false;
    let mut k = 0;
    while k < rest.len() {
        let t = rest[k].text.as_str();
        if t == "--" {
            k += 1;
            break;
        }
        if takes_value.contains(&t) {
            if program.contains(&t) {
                given = true;
                if rest.get(k + 1).is_some_and(|v| v.runtime) {
                    return true;
                }
            }
            k += 2;
            continue;
        }
        if t.starts_with('-') && t != "-" {
            // An attached program (`-f./p.awk`, `--source=...`, `--expression=...`).
            given |= program
                .iter()
                .any(|o| t.starts_with(&format!("{o}=")) || (o.len() == 2 && t.starts_with(o)));
            k += 1;
            continue;
        }
        break;
    }
    !given && rest.get(k).is_some_and(|w| w.runtime)
}

/// Programs that never run their arguments as commands: a word mentioning tmux is data to
/// them.
fn is_inert(base: &str, args: &[Word]) -> bool {
    match base {
        "echo" | "printf" | "grep" | "egrep" | "fgrep" | "cat" | "head" | "tail" | "wc" | "ls"
        | "tree" | "file" | "stat" | "du" | "df" | "pwd" | "true" | "false" | "test" | "["
        | "[[" | "]]" | "uniq" | "cut" | "tr" | "diff" | "cmp" | "comm" | "jq" | "realpath"
        | "readlink" | "basename" | "dirname" | "which" | "whereis" | "mkdir" | "touch" | "rm"
        | "rmdir" | "chmod" | "tee" | "nl" | "tac" | "column" | "date" | "sleep" | "id"
        | "uname" | "pgrep" | "pidof" | "ps" | "for" | "case" | "select" | "in" | "esac" | "fi"
        | "done" | "return" | "exit" | "shift" | "read" | "wait" | "true:" | ":" | "md5sum"
        | "sha256sum" | "xxd" | "od" | "hexdump" | "strings" | "tput" => true,
        // ripgrep, unless it is given a preprocessor command.
        "rg" => !args.iter().any(|a| a.text.starts_with("--pre")),
        // git without global options before its subcommand, and only subcommands that do
        // not run a configured or given command.
        "git" => {
            args.first().is_some_and(|a| {
                matches!(
                    a.text.as_str(),
                    "commit"
                        | "add"
                        | "log"
                        | "show"
                        | "diff"
                        | "status"
                        | "rm"
                        | "mv"
                        | "blame"
                        | "restore"
                        | "branch"
                        | "tag"
                        | "switch"
                        | "checkout"
                        | "grep"
                )
            }) && !args.iter().any(|a| {
                a.text.starts_with("--ext")
                    || a.text == "-O"
                    || a.text.starts_with("--open")
                    // A value only known at run time can be any option (`--output=x.sh`).
                    || a.runtime
                    || a.text.starts_with("--output")
            })
        }
        // cargo, unless it is handed configuration (a runner is a command).
        "cargo" => !args
            .iter()
            .any(|a| a.text.starts_with("--config") || a.text.starts_with("-Z")),
        _ => false,
    }
}

/// A redirection target that is no file: `/dev/null`, the standard streams, a descriptor.
fn discarded(w: &str) -> bool {
    matches!(w, "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty")
        || w.starts_with("/dev/fd/")
        || w.trim_start_matches('&')
            .chars()
            .all(|c| c.is_ascii_digit())
}

/// What a simple command prints when the guard can read it: `echo` of literal words (no
/// escapes, no `-e`), `printf` of a literal format with only `%s`, `%%`, `\n`, `\t`, `\\`,
/// `:`/`true`, `cat` of a here-document. `None` for anything else (a decoder, a copy, a
/// program's output, an expansion).
fn literal_output(words: &[Word], input: &Input, stdin: Option<&str>) -> Option<String> {
    let ws: Vec<&Word> = words
        .iter()
        .skip_while(|w| is_assignment(&w.text))
        .collect();
    let (first, rest) = ws.split_first()?;
    if first.dynamic || rest.iter().any(|w| w.dynamic || w.undecoded) {
        return None;
    }
    let texts: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
    match basename(&first.text) {
        "echo" => {
            let escapes = texts
                .iter()
                .any(|t| t.contains('\\') || (t.starts_with('-') && t.contains('e')));
            (!escapes).then(|| texts.join(" "))
        }
        "printf" => {
            let plain = |t: &str| {
                let mut it = t.chars();
                while let Some(c) = it.next() {
                    let ok = match c {
                        '%' => matches!(it.next(), Some('s' | '%')),
                        '\\' => matches!(it.next(), Some('n' | 't' | '\\')),
                        _ => true,
                    };
                    if !ok {
                        return false;
                    }
                }
                true
            };
            let ok = !texts.is_empty() && texts.iter().all(|t| plain(t) && !t.starts_with("-v"));
            ok.then(|| texts.concat())
        }
        ":" | "true" if texts.is_empty() => Some(String::new()),
        "cat" if texts.iter().all(|t| *t == "-") && matches!(input, Input::Text(_)) => {
            stdin.map(str::to_string)
        }
        _ => None,
    }
}

/// Literal text written to a file that the guard will not take as readable code: an
/// expansion, a backquote, or what inline interpreter code is denied for.
fn opaque_text(t: &str) -> bool {
    t.contains('$')
        || t.contains('`')
        || suspicious_code(t)
        || dynamic_code(&t.to_ascii_lowercase())
}

/// `tee`, `cp`, `curl -o`, ... writing a file with content the guard cannot read.
fn copies_unread(base: &str, rest: &[Word]) -> bool {
    let short = |w: &Word, f: char| {
        w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains(f)
    };
    match base {
        "tee" => rest.iter().any(|w| !w.text.starts_with('-')),
        "cp" | "mv" | "ln" | "install" | "rsync" | "scp" | "patch" => true,
        // Programs that write files they were given names of: `uniq IN OUT`, `sort -o F`,
        // `split`/`csplit` (every piece is a file), `iconv -o F`.
        "uniq" => {
            rest.iter()
                .filter(|w| w.text == "-" || !w.text.starts_with('-'))
                .count()
                >= 2
        }
        "sort" | "shuf" | "iconv" => rest
            .iter()
            .any(|w| short(w, 'o') || w.text.starts_with("--output") || w.text.starts_with("--o")),
        "split" | "csplit" | "objcopy" | "strip" => true,
        "sdiff" => rest
            .iter()
            .any(|w| short(w, 'o') || w.text.starts_with("--output")),
        // `git apply`/`am` write the files a patch names, from text the guard cannot read.
        // (`--output=F` of log, show, diff, format-patch: text built by `--format`, whose
        // `%x74` escapes spell anything.)
        "yq" => rest
            .iter()
            .any(|w| w.text == "-i" || w.text.starts_with("--inplace") || short(w, 'i')),
        "git" => {
            rest.iter()
                .find(|w| !w.text.starts_with('-'))
                .is_some_and(|w| matches!(w.text.as_str(), "apply" | "am"))
                || rest
                    .iter()
                    .any(|w| w.text.starts_with("--output") || w.text == "-o")
        }
        "dd" => rest.iter().any(|w| w.text.starts_with("of=")),
        "curl" => rest.iter().any(|w| {
            short(w, 'o')
                || short(w, 'O')
                || short(w, 'K')
                || ["--output", "--remote-name", "--config"]
                    .iter()
                    .any(|o| w.text.starts_with(o))
        }),
        "wget" => {
            !rest.iter().any(|w| {
                w.text == "--spider" || w.text.ends_with("O-") || w.text == "--output-document=-"
            }) && !rest
                .windows(2)
                .any(|p| short(&p[0], 'O') && p[1].text == "-")
        }
        "sed" | "perl" => rest
            .iter()
            .any(|w| short(w, 'i') || w.text.starts_with("--in-place")),
        _ => false,
    }
}

/// Kernel files whose write signals, kills, freezes or moves processes (round 37).
const KERNEL_CONTROL_FILES: &[&str] = &[
    "sysrq-trigger",
    "cgroup.kill",
    "cgroup.freeze",
    "cgroup.procs",
    "cgroup.threads",
    "freezer.state",
    "mem",
];

/// Why a file written (a redirection target, a writer's destination) may be a kernel control
/// file, if it may (the thirty-seventh round: `echo i > /proc/sysrq-trigger`, `echo 1 >
/// .../cgroup.kill`, `dd of=/proc/PID/mem` kill or freeze the tmux server): a path with a
/// `proc` or `sys` component, a name in [`KERNEL_CONTROL_FILES`], or (with `runtime`) a path
/// holding a value only known at run time (`$x`, `$(...)`, a backquote, a glob or brace),
/// which may be any of those (`$HOME`, `$PWD` and `$$` are not).
fn kernel_write_target(t: &str, runtime: bool) -> Option<String> {
    if t.split('/').any(|p| p == "proc" || p == "sys") {
        return Some(format!("writes `{t}`, under /proc or /sys"));
    }
    if KERNEL_CONTROL_FILES.contains(&basename(t)) {
        return Some(format!("writes `{t}`, a name of a kernel control file"));
    }
    if runtime && write_target_is_runtime(t) {
        return Some(format!(
            "writes `{t}`, a path only known at run time, which may be under /proc or /sys"
        ));
    }
    None
}

fn write_target_is_runtime(t: &str) -> bool {
    let mut rest = t.to_string();
    for known in ["${HOME}", "${PWD}", "$HOME", "$PWD", "$$"] {
        let mut out = String::new();
        let mut s = rest.as_str();
        while let Some(k) = s.find(known) {
            let after = &s[k + known.len()..];
            out.push_str(&s[..k]);
            if known.ends_with(['}', '$'])
                || !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            {
                out.push('/');
            } else {
                out.push_str(known);
            }
            s = after;
        }
        out.push_str(s);
        rest = out;
    }
    rest.contains(['$', '`', '*', '?', '[', '{'])
}

/// The files a writer writes, for [`kernel_write_target`]: (the word, whether a run-time value
/// counts). `cp`/`mv`/`ln`/`install`/`rsync`/`scp`: every operand (a source may become a
/// link, `ln -s /proc/...`), the run-time rule for the destination (the last, or `-t`'s);
/// `tee`, `truncate`: every operand; `dd`: `of=`; `sed -i`/`perl -i`: the files after the
/// script; any other writer: the values of `-o`, `-O`, `--output`, `--output-document`.
fn write_operands(base: &str, rest: &[Word]) -> Vec<(String, bool)> {
    let operands: Vec<&str> = rest
        .iter()
        .map(|w| w.text.as_str())
        .filter(|t| !t.starts_with('-'))
        .collect();
    let after = |opts: &[&str]| -> Vec<(String, bool)> {
        let mut out = Vec::new();
        for (k, w) in rest.iter().enumerate() {
            let t = w.text.as_str();
            let next = || rest.get(k + 1).map(|v| (v.text.clone(), true));
            for o in opts {
                if let Some(long) = o.strip_prefix("--") {
                    if let Some(v) = t.strip_prefix("--").and_then(|x| x.strip_prefix(long)) {
                        match v.strip_prefix('=') {
                            Some(v) => out.push((v.to_string(), true)),
                            None if v.is_empty() => out.extend(next()),
                            None => {}
                        }
                    }
                } else if let Some(letter) = o.strip_prefix('-')
                    && t.starts_with('-')
                    && !t.starts_with("--")
                    && let Some(at) = t[1..].find(letter)
                {
                    // `-o F`, `-sSLo F`, `-oF`.
                    let v = &t[1 + at + letter.len()..];
                    if v.is_empty() {
                        out.extend(next());
                    } else {
                        out.push((v.to_string(), true));
                    }
                }
            }
        }
        out
    };
    match base {
        "tee" | "truncate" => operands.iter().map(|t| (t.to_string(), true)).collect(),
        "dd" => rest
            .iter()
            .filter_map(|w| w.text.strip_prefix("of="))
            .map(|t| (t.to_string(), true))
            .collect(),
        "cp" | "mv" | "ln" | "install" | "rsync" | "scp" => {
            let mut out: Vec<(String, bool)> =
                operands.iter().map(|t| (t.to_string(), false)).collect();
            if let Some(last) = out.last_mut() {
                last.1 = true;
            }
            out.extend(after(&["-t", "--target-directory"]));
            out
        }
        "sed" | "perl" if copies_unread(base, rest) => {
            let mut out = Vec::new();
            let mut script_given = false;
            let mut skip = false;
            for w in rest {
                let t = w.text.as_str();
                if skip {
                    skip = false;
                } else if t.starts_with("--expression") || t.starts_with("--file") {
                    script_given = true;
                    skip = !t.contains('=');
                } else if t.starts_with('-') && !t.starts_with("--") {
                    if t.ends_with('e') || t.ends_with('f') {
                        script_given = true;
                        skip = true;
                    }
                } else if !t.starts_with('-') {
                    if script_given {
                        out.push((t.to_string(), true));
                    } else {
                        script_given = true;
                    }
                }
            }
            out
        }
        _ => after(&["-o", "-O", "--output", "--output-document"]),
    }
}

/// Programs that load no code from the current directory or a path, whatever it holds
/// (rule 6): text tools, file tools, decoders, downloads, shell builtins. A shell given `-c`
/// or a here-document is parsed instead; every other program (interpreters, build tools,
/// package managers, test runners, git, a program the guard does not know) may load code.
fn loads_no_code(base: &str, rest: &[Word], input: &Input) -> bool {
    match base {
        "echo" | "printf" | "grep" | "egrep" | "fgrep" | "head" | "tail" | "wc" | "sort"
        | "uniq" | "cut" | "tr" | "jq" | "cat" | "column" | "nl" | "tac" | "true" | "false"
        | "test" | "[" | "[[" | "]]" | "sed" | "gsed" | "xxd" | "od" | "hexdump" | "strings"
        | "sleep" | "date" | ":" | "ls" | "tree" | "file" | "stat" | "du" | "df" | "pwd"
        | "diff" | "cmp" | "comm" | "realpath" | "readlink" | "basename" | "dirname" | "which"
        | "whereis" | "mkdir" | "touch" | "rm" | "rmdir" | "chmod" | "chown" | "tee" | "cp"
        | "mv" | "ln" | "install" | "dd" | "truncate" | "md5sum" | "sha1sum" | "sha256sum"
        | "sha512sum" | "b2sum" | "cksum" | "base64" | "base32" | "basenc" | "gzip" | "gunzip"
        | "zcat" | "bzip2" | "bunzip2" | "xz" | "unxz" | "zstd" | "unzip" | "tar" | "cpio"
        | "rev" | "id" | "uname" | "pgrep" | "pidof" | "ps" | "tput" | "curl" | "wget" | "cd"
        | "pushd" | "popd" | "export" | "unset" | "set" | "shift" | "read" | "wait" | "return"
        | "exit" | "done" | "fi" | "esac" | "for" | "case" | "select" | "in" | "kill" | "pkill"
        | "killall" | "local" | "declare" | "typeset" | "readonly" | "let" | "eval" | "busybox" => {
            true
        }
        "rg" => !rest.iter().any(|a| a.text.starts_with("--pre")),
        "awk" | "gawk" | "mawk" | "nawk" => !rest.iter().any(|a| {
            let t = a.text.as_str();
            matches!(t, "-f" | "-i" | "-l" | "-E")
                || ["--file", "--include", "--load", "--exec"]
                    .iter()
                    .any(|o| t.starts_with(o))
                || t.contains("@include")
                || t.contains("@load")
        }),
        "find" => !rest
            .iter()
            .any(|a| matches!(a.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")),
        b if SHELLS.contains(&b) => {
            matches!(input, Input::Text(_))
                || rest.iter().any(|w| {
                    w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('c')
                })
        }
        _ => false,
    }
}

/// Programs that run a command given among their arguments, with option syntaxes the guard
/// does not parse (`prlimit --nofile=9 CMD`, `setarch ARCH CMD`, `bwrap --bind A B CMD`):
/// the first few words that are no option are each judged as the command, and the runner's
/// words as any unknown program's.
const RUNNERS: &[&str] = &[
    "prlimit",
    "unshare",
    "setpriv",
    "strace",
    "setarch",
    "linux32",
    "linux64",
    "i386",
    "x86_64",
    "chroot",
    "runuser",
    "capsh",
    "systemd-run",
    "nsenter",
    "sg",
    "ltrace",
    "valgrind",
    "perf",
    "numactl",
    "fakeroot",
    "fakechroot",
    "dbus-run-session",
    "dbus-launch",
    "ssh-agent",
    "eatmydata",
    "faketime",
    "firejail",
    "bwrap",
    "chpst",
    "daemonize",
    "entr",
    "ifne",
    "pkexec",
    "xvfb-run",
    "lckdo",
    "cpulimit",
    "trickle",
    "tsp",
    "dtach",
    "abduco",
    "catchsegv",
    "sem",
    "torsocks",
    "proxychains",
    "proxychains4",
    "cgexec",
    "systemd-inhibit",
    "run-one",
    "retry",
    "caffeinate",
    "schedtool",
    "softlimit",
    "setuidgid",
    "envuidgid",
    "rlwrap",
    "catatonit",
    "tini",
    "dumb-init",
    // The thirty-fifth round.
    "choom",
    "luit",
    "heaptrack",
    "memusage",
    "uftrace",
    "rr",
    "gdbserver",
    "valgrind.bin",
    "cpulimit",
    "nocache",
    "vglrun",
    "primusrun",
    "optirun",
    "pasuspender",
    "flatpak-spawn",
    "systemd-nspawn",
];

/// Programs known to take their arguments as values, never as a local command to run
/// (`curl -H "Bearer $TOKEN"`, `gh pr create --body "$(cat ...)"`, `git push origin
/// "$(git branch --show-current)"` but a git subcommand only known at run time).
fn args_are_values(base: &str, rest: &[Word]) -> bool {
    // The thirty-third round: a run-time value can be an option too (`git grep "$(printf --
    // -Otmux...)"`, `git rebase "$(... --exec=...)"`, `sqlite3 db "$(... .shell ...)"`), so
    // only programs that run nothing whatever their options take any, and git and gh only
    // as the value of an option that takes text, or after `--`, in subcommands that run
    // nothing (`git commit -m "$(cat <<EOF ...)"`, `gh pr create --body "$(...)"`).
    // `any`: subcommands whose options run nothing, so a run-time word may be anything there
    // (`git log $(git rev-parse HEAD)`, `git checkout "$BRANCH"`).
    let subcommand_values = |subs: &[&str], any: &[&str], opts: &[&str]| {
        let Some(k) = rest.iter().position(|w| !w.text.starts_with('-')) else {
            return false;
        };
        let sub = rest[k].text.as_str();
        if rest[k].dynamic || rest[k].runtime || !(subs.contains(&sub) || any.contains(&sub)) {
            return false;
        }
        if rest[..k].iter().any(|w| w.runtime) {
            return false;
        }
        let dashes = rest.iter().position(|w| w.text == "--");
        rest.iter().enumerate().skip(k + 1).all(|(j, w)| {
            !w.runtime
                || any.contains(&sub)
                || dashes.is_some_and(|d| j > d)
                || opts.contains(&rest[j - 1].text.as_str())
        })
    };
    match base {
        "curl" | "wget" | "jq" | "yq" | "http" | "https" => true,
        // The thirty-fourth round: a read-only subcommand given a run-time `--output=x.sh`
        // wrote a script the line then ran, so no git subcommand takes a run-time option.
        "git" => subcommand_values(
            &[
                "commit",
                "add",
                "rm",
                "mv",
                "branch",
                "tag",
                "restore",
                "reset",
                "log",
                "show",
                "diff",
                "status",
                "checkout",
                "switch",
                "rev-parse",
                "rev-list",
                "cat-file",
                "ls-files",
                "ls-tree",
                "blame",
                "merge-base",
                "describe",
                "shortlog",
            ],
            &[],
            &[
                "-m",
                "--message",
                "--author",
                "--date",
                "-b",
                "-B",
                "--since",
                "--until",
            ],
        ),
        "gh" | "glab" => subcommand_values(
            &[
                "pr", "issue", "repo", "release", "api", "run", "workflow", "label", "search",
                "gist",
            ],
            &[],
            &[
                "--body",
                "-b",
                "--title",
                "-t",
                "--jq",
                "-q",
                "--field",
                "-f",
                "--raw-field",
                "-F",
            ],
        ),
        _ => false,
    }
}

/// How many words of a runner that are no option are tried as its command.
const RUNNER_TRIES: usize = 4;

/// Why a `kill` may reach the tmux server, if it may. The thirty-fifth round: `kill -9
/// $((-1))`, `$[-1]`, `$(echo -1)`, `' -1'` signalled every process, so an operand must be a
/// literal decimal pid (`1234`; `0` is the caller's own group, which the tmux server, a
/// session leader, is not in), a job (`%1`), or `$!`/`$$` (this shell's last background job,
/// itself). Anything else is denied: a value only known at run time (it may be `-1`, every
/// process, or a negative id, a process group: the tmux server leads its own), `-1`, a
/// negative id, a name (`/bin/kill` takes process names), a signal only known at run time.
fn kill_denial(rest: &[Word]) -> Option<String> {
    let runtime = |w: &Word| {
        Some(format!(
            "`kill` is given `{}`, a value only known when the shell runs: it may be `-1` \
             (every process) or a negative id (a process group: the tmux server leads its \
             own); kill takes only literal process ids (`1234`), jobs (`%1`), `$!` and `$$`",
            w.text
        ))
    };
    let mut k = 0;
    let mut signal = false;
    let mut operands = false;
    while k < rest.len() {
        let w = &rest[k];
        let t = w.text.as_str();
        if (w.dynamic || w.runtime || w.undecoded) && !matches!(t, "$!" | "$$") {
            return runtime(w);
        }
        if !operands {
            match t {
                "--" => {
                    operands = true;
                    k += 1;
                    continue;
                }
                "-l" | "-L" | "--list" | "--table" => return None,
                "-s" | "-n" | "--signal" | "-q" | "--queue" => {
                    if let Some(v) = rest.get(k + 1)
                        && (v.dynamic || v.runtime)
                    {
                        return runtime(v);
                    }
                    signal |= !matches!(t, "-q" | "--queue");
                    k += 2;
                    continue;
                }
                "--timeout" => {
                    k += 3;
                    continue;
                }
                "-p" | "--pid" | "-a" | "--all" | "--verbose" => {
                    k += 1;
                    continue;
                }
                "-1" => {
                    return Some(
                        "`kill -1` signals every process of the user (the tmux server among them)"
                            .into(),
                    );
                }
                _ if t.starts_with('-') && t.len() > 1 && !signal => {
                    // `-9`, `-KILL`, `-SIGTERM`, `--signal=TERM`.
                    signal = true;
                    k += 1;
                    continue;
                }
                _ => operands = true,
            }
        }
        let pid = !t.is_empty() && t.chars().all(|c| c.is_ascii_digit());
        // The thirty-sixth round: util-linux `kill` (and bash's) reads 4294967295 as -1,
        // every process: a pid is `0` or a decimal in 1..=PID_MAX_LIMIT, no leading zero.
        if pid && !pid_in_range(t) {
            return Some(format!(
                "`kill` of `{t}`: a process id is a decimal from 1 to {PID_MAX_LIMIT} without \
                 leading zeros; a larger one wraps (4294967295 is -1, every process)"
            ));
        }
        let job = t.starts_with('%') && t.len() > 1;
        if !(pid || job || matches!(t, "$!" | "$$")) {
            return Some(format!(
                "`kill` of `{t}`: only a literal process id (`1234`), a job (`%1`), `$!` or `$$` \
                 passes; `-1` is every process, a negative id a process group (the tmux server \
                 leads its own), and a name may be any process"
            ));
        }
        k += 1;
    }
    None
}

/// The kernel's largest pid (`PID_MAX_LIMIT` on 64-bit Linux).
const PID_MAX_LIMIT: u64 = 4_194_304;

/// Whether the digits `t` are `0` or a pid of 1..=[`PID_MAX_LIMIT`] without a leading zero.
fn pid_in_range(t: &str) -> bool {
    t == "0"
        || !t.starts_with('0')
            && t.len() <= 7
            && t.parse::<u64>()
                .is_ok_and(|p| (1..=PID_MAX_LIMIT).contains(&p))
}

/// Why `fuser` may signal the tmux server, if it may: with `-k`/`--kill` it signals every
/// process using a file, and which processes use a file (`/dev/null`, a library, a mount
/// point) the guard cannot know. Any short cluster holding `k` (`-km`, `-kv`), any long
/// option starting `--k`, and a word only known at run time (it may be `-k`) count.
fn fuser_kills(rest: &[Word]) -> bool {
    rest.iter().any(|w| {
        let t = w.text.as_str();
        (w.dynamic && t != "$$" && t != "$!")
            || t.starts_with("--k")
            || (t.starts_with('-') && !t.starts_with("--") && t.contains('k'))
    })
}

/// Why a session or service manager is told to signal or stop processes, if it is:
/// `loginctl` but its read-only verbs (`kill-user`, `terminate-session`, ... signal every
/// process of a user or session, the tmux server among them); `systemctl` but its read-only
/// verbs, `daemon-reload`, `reset-failed`, `enable` and `disable` without `--now` (`kill`,
/// `stop`, `restart`, `isolate`, `start exit.target` stop the unit or scope holding the tmux
/// server); a D-Bus method call or signal (`busctl call`/`emit`/`set-property`, `gdbus
/// call`/`emit`, `dbus-send`, `qdbus` with a method, `varlinkctl call`: `KillUser`,
/// `KillUnit`, `StopUnit` by another road). A word only known at run time denies them all.
fn manager_signal_denial(base: &str, rest: &[Word]) -> Option<String> {
    if !matches!(
        base,
        "loginctl"
            | "systemctl"
            | "busctl"
            | "gdbus"
            | "varlinkctl"
            | "dbus-send"
            | "qdbus"
            | "qdbus6"
            | "qdbus-qt5"
            | "qdbus-qt6"
    ) {
        return None;
    }
    let deny = |what: &str| {
        Some(format!(
            "`{base}` {what}: it can signal or stop the processes of a user, session or unit, \
             the tmux server among them"
        ))
    };
    let runtime = |w: &&Word| w.dynamic && !matches!(w.text.as_str(), "$$" | "$!");
    if let Some(w) = rest.iter().find(runtime) {
        return deny(&format!(
            "is given `{}`, a value only known at run time",
            w.text
        ));
    }
    let has = |v: &str| rest.iter().any(|w| w.text == v);
    // The verb: the first word that is no option nor an option's value.
    let verb = |values: &[&str]| -> Option<String> {
        let mut k = 0;
        while k < rest.len() {
            let t = rest[k].text.as_str();
            if t == "--" {
                return rest.get(k + 1).map(|w| w.text.clone());
            }
            if !t.starts_with('-') || t == "-" {
                return Some(t.to_string());
            }
            if values.contains(&t) {
                k += 1;
            }
            k += 1;
        }
        None
    };
    match base {
        "loginctl" => {
            const READ_ONLY: &[&str] = &[
                "list-sessions",
                "session-status",
                "show-session",
                "list-users",
                "user-status",
                "show-user",
                "list-seats",
                "seat-status",
                "show-seat",
                "help",
            ];
            let values = [
                "-p",
                "--property",
                "-P",
                "-s",
                "--signal",
                "--kill-whom",
                "-H",
                "--host",
                "-M",
                "--machine",
                "-n",
                "--lines",
                "-o",
                "--output",
            ];
            match verb(&values) {
                Some(v) if !READ_ONLY.contains(&v.as_str()) => deny(&format!("`{v}`")),
                _ if rest
                    .iter()
                    .any(|w| w.text.starts_with("kill-") || w.text.starts_with("terminate-")) =>
                {
                    deny("with a kill or terminate verb")
                }
                _ => None,
            }
        }
        "systemctl" => {
            const ALLOWED: &[&str] = &[
                "status",
                "show",
                "cat",
                "help",
                "list-units",
                "list-unit-files",
                "list-sockets",
                "list-timers",
                "list-jobs",
                "list-dependencies",
                "list-machines",
                "list-paths",
                "list-automounts",
                "is-active",
                "is-failed",
                "is-enabled",
                "is-system-running",
                "get-default",
                "show-environment",
                "daemon-reload",
                "reset-failed",
                "enable",
                "disable",
            ];
            const STOPS: &[&str] = &[
                "kill",
                "stop",
                "restart",
                "try-restart",
                "reload-or-restart",
                "try-reload-or-restart",
                "condrestart",
                "force-reload",
                "reload",
                "isolate",
                "exit",
                "poweroff",
                "reboot",
                "halt",
                "kexec",
                "soft-reboot",
                "start",
                "freeze",
                "set-property",
                "clean",
                "switch-root",
                "emergency",
                "rescue",
                "default",
            ];
            let values = [
                "-t",
                "--type",
                "-p",
                "--property",
                "-P",
                "--state",
                "-s",
                "--signal",
                "--kill-whom",
                "--kill-value",
                "--what",
                "-H",
                "--host",
                "-M",
                "--machine",
                "-n",
                "--lines",
                "-o",
                "--output",
                "--job-mode",
                "--root",
                "--image",
                "--image-policy",
                "--preset-mode",
                "--boot-loader-menu",
                "--boot-loader-entry",
                "--reboot-argument",
                "--message",
                "--timestamp",
                "--check-inhibitors",
                "--drop-in",
                "--when",
            ];
            match verb(&values) {
                Some(v) if !ALLOWED.contains(&v.as_str()) => deny(&format!("`{v}`")),
                _ if rest.iter().any(|w| STOPS.contains(&w.text.as_str())) => {
                    deny("with a verb that stops or signals")
                }
                _ if has("--now")
                    || rest.iter().any(|w| {
                        w.text.starts_with("--signal")
                            || w.text.starts_with("--kill")
                            || w.text == "-s"
                    }) =>
                {
                    deny("with `--now` or a signal")
                }
                _ => None,
            }
        }
        "busctl" | "gdbus" | "varlinkctl"
            if rest
                .iter()
                .any(|w| matches!(w.text.as_str(), "call" | "emit" | "set-property")) =>
        {
            deny("calls a D-Bus method or emits a signal")
        }
        "dbus-send" => deny("sends a D-Bus message"),
        "qdbus" | "qdbus6" | "qdbus-qt5" | "qdbus-qt6"
            if rest.iter().filter(|w| !w.text.starts_with('-')).count() > 2 =>
        {
            deny("calls a D-Bus method")
        }
        _ => None,
    }
}

/// Whether `start-stop-daemon` is told to stop (signal) processes: `-K`, `--stop` (or its
/// unique prefix `--sto`), or a short cluster holding `K`. It selects them by user, parent,
/// pid file, name or executable, any of which may pick the tmux server.
fn start_stop_daemon_stops(rest: &[Word]) -> bool {
    rest.iter().any(|w| {
        let t = w.text.as_str();
        (t.len() >= 5 && "--stop".starts_with(t))
            || (t.starts_with('-') && !t.starts_with("--") && t.contains('K'))
    })
}

/// Whether `t` is a signal given as an option (`-9`, `-KILL`, `-SIGHUP`, `-RTMIN+1`).
fn signal_option(t: &str) -> bool {
    let Some(name) = t.strip_prefix('-') else {
        return false;
    };
    let name = name.strip_prefix("SIG").unwrap_or(name);
    const SIGNALS: &[&str] = &[
        "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "IOT", "BUS", "FPE", "KILL", "USR1", "SEGV",
        "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CLD", "CONT", "STOP", "TSTP", "TTIN",
        "TTOU", "URG", "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "POLL", "PWR", "SYS",
    ];
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_digit()))
        || SIGNALS.contains(&name.to_ascii_uppercase().as_str())
        || name.starts_with("RTMIN")
        || name.starts_with("RTMAX")
}

/// `pkill`/`killall` options that select processes by something other than their name (the
/// thirty-fifth round): a parent (`-P 1`, the server's parent after it daemonised), a user
/// (`-u`, `-U`, `--euid`, `--uid`, `killall -u`), a group, a terminal (`-t`), an inverted
/// match (`-v`), a pid file (`-F`), a namespace, a cgroup or an environment: each may select
/// the tmux server.
fn selects_beyond_names(base: &str, rest: &[Word]) -> bool {
    let (letters, longs): (&str, &[(&str, usize)]) = if base == "pkill" {
        (
            "PuUGgstvFL",
            &[
                ("--parent", 4),
                ("--euid", 3),
                ("--uid", 3),
                ("--group", 3),
                ("--pgroup", 3),
                ("--session", 3),
                ("--terminal", 3),
                ("--inverse", 3),
                ("--pidfile", 3),
                ("--logpidfile", 3),
                ("--ns", 4),
                ("--nslist", 5),
                ("--cgroup", 3),
                ("--env", 3),
            ],
        )
    } else {
        (
            "ugZ",
            &[("--user", 3), ("--process-group", 3), ("--context", 3)],
        )
    };
    rest.iter().any(|w| {
        let t = w.text.as_str();
        if t.starts_with("--") {
            longs.iter().any(|(o, min)| long_opt(t, o, *min))
        } else if t.starts_with('-') && t.len() > 1 && !signal_option(t) {
            // A cluster of short options (`-fu`, `-P1`): any selecting letter counts.
            t[1..]
                .chars()
                .take_while(|c| c.is_ascii_alphabetic())
                .any(|c| letters.contains(c))
        } else {
            false
        }
    })
}

/// `pkill PATTERN` and `killall -r PATTERN` match a regex anywhere in a process's name: the
/// tmux server's is `tmux: server` (`pkill m`, `pkill 't.ux'`, `pkill serve`). A pattern with a
/// repetition or alternation is taken to match anything; `.` as any character. `-g`/`-s`
/// (a process group or session, as `kill -N`) are denied too.
fn signal_pattern_may_reach_tmux(base: &str, rest: &[Word]) -> bool {
    let group = |t: &str| {
        matches!(t, "-g" | "-s" | "--pgroup" | "--session" | "-G")
            || t.starts_with("--pgroup=")
            || t.starts_with("--session=")
    };
    if base == "pkill" && rest.iter().any(|w| group(&w.text)) {
        return true;
    }
    let regex = base == "pkill"
        || rest
            .iter()
            .any(|w| w.text == "-r" || w.text.starts_with("--regex"));
    if !regex {
        return false;
    }
    rest.iter().filter(|w| !w.text.starts_with('-')).any(|w| {
        let re = w.text.as_str();
        if w.dynamic || re.contains(['*', '+', '?', '{', '|', '(']) {
            return true;
        }
        let mut glob = String::from("*");
        let mut chars = re.chars();
        while let Some(ch) = chars.next() {
            match ch {
                '.' => glob.push('?'),
                '^' | '$' => {}
                // `\w`, `\S`, `\x6d`: a class or an escape may be any character.
                '\\' => {
                    chars.next();
                    glob.push('?');
                }
                c => glob.push(c),
            }
        }
        glob.push('*');
        let p: Vec<char> = glob.chars().collect();
        ["tmux: server", "tmux: client", "tmux"].iter().any(|t| {
            let s: Vec<char> = t.chars().collect();
            glob_matches(&p, &s)
        })
    })
}

/// A shell glob (`*`, `?`, `[...]`, `\x`) against a whole string, ignoring case; a bracket
/// is read as [`glob_tokens`] reads it and judged by [`class_matches`]; a bracket that does
/// not close may match anything (the guard errs towards a match).
fn glob_matches(p: &[char], s: &[char]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some('*') => (0..=s.len()).any(|k| glob_matches(&p[1..], &s[k..])),
        Some('?') => !s.is_empty() && glob_matches(&p[1..], &s[1..]),
        Some('[') => match bracket_end(p) {
            Some(end) if !s.is_empty() => {
                let body: String = p[1..end].iter().collect();
                class_matches(&body, s[0].to_ascii_lowercase())
                    && glob_matches(&p[end + 1..], &s[1..])
            }
            Some(_) => false,
            None => true,
        },
        Some('\\') if p.len() > 1 => {
            !s.is_empty() && p[1].eq_ignore_ascii_case(&s[0]) && glob_matches(&p[2..], &s[1..])
        }
        Some(c) => !s.is_empty() && c.eq_ignore_ascii_case(&s[0]) && glob_matches(&p[1..], &s[1..]),
    }
}

/// Where the bracket opening `p` (`p[0] == '['`) closes: a leading `!`/`^` and then a leading
/// `]` are members, and `[:..:]`, `[=..=]`, `[.c.]` end at their own `:]`, `=]`, `.]`.
fn bracket_end(p: &[char]) -> Option<usize> {
    let mut k = 1;
    if matches!(p.get(k), Some('!' | '^')) {
        k += 1;
    }
    if p.get(k) == Some(&']') {
        k += 1;
    }
    while k < p.len() {
        if p[k] == '['
            && let Some(&d) = p.get(k + 1)
            && matches!(d, ':' | '=' | '.')
            && let Some(e) =
                (k + 2..p.len().saturating_sub(1)).find(|&e| p[e] == d && p[e + 1] == ']')
        {
            k = e + 2;
            continue;
        }
        if p[k] == ']' {
            return Some(k);
        }
        k += 1;
    }
    None
}

/// Keywords and words that run the rest of the words as the command.
const KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "coproc",
];

/// Wrappers that run the rest as a command: (name, options taking a value, changes the
/// environment, extends the arguments).
const WRAPPERS: &[(&str, &str, bool, bool)] = &[
    ("command", "", false, false),
    ("builtin", "", false, false),
    ("exec", "a", false, false),
    ("nohup", "", false, false),
    ("nice", "n", false, false),
    ("ionice", "cnp", false, false),
    ("setsid", "", false, false),
    ("stdbuf", "ioe", false, false),
    ("timeout", "sk", false, false),
    ("chronic", "", false, false),
    ("unbuffer", "", false, false),
    ("time", "fo", false, false),
    ("env", "uCS", true, false),
    ("sudo", "ughpCDrtUT", true, false),
    ("doas", "uC", true, false),
    ("xargs", "IdaELnPs", false, true),
    ("taskset", "", false, false),
    ("chrt", "", false, false),
    ("flock", "wEc", false, false),
];

/// tmux's command table (tmux/tmux `cmd.c` `cmd_table`, in its order): (name, alias).
const TMUX_COMMANDS: &[(&str, Option<&str>)] = &[
    ("attach-session", Some("attach")),
    ("bind-key", Some("bind")),
    ("break-pane", Some("breakp")),
    ("capture-pane", Some("capturep")),
    ("choose-buffer", None),
    ("choose-client", None),
    ("choose-tree", None),
    ("clear-history", Some("clearhist")),
    ("clear-prompt-history", Some("clearphist")),
    ("clock-mode", None),
    ("command-prompt", None),
    ("confirm-before", Some("confirm")),
    ("copy-mode", None),
    ("customize-mode", None),
    ("delete-buffer", Some("deleteb")),
    ("detach-client", Some("detach")),
    ("display-menu", Some("menu")),
    ("display-message", Some("display")),
    ("display-popup", Some("popup")),
    ("display-panes", Some("displayp")),
    ("find-window", Some("findw")),
    ("has-session", Some("has")),
    ("if-shell", Some("if")),
    ("join-pane", Some("joinp")),
    ("kill-pane", Some("killp")),
    ("kill-server", None),
    ("kill-session", None),
    ("kill-window", Some("killw")),
    ("last-pane", Some("lastp")),
    ("last-window", Some("last")),
    ("link-window", Some("linkw")),
    ("list-buffers", Some("lsb")),
    ("list-clients", Some("lsc")),
    ("list-commands", Some("lscm")),
    ("list-keys", Some("lsk")),
    ("list-panes", Some("lsp")),
    ("list-sessions", Some("ls")),
    ("list-windows", Some("lsw")),
    ("load-buffer", Some("loadb")),
    ("lock-client", Some("lockc")),
    ("lock-server", Some("lock")),
    ("lock-session", Some("locks")),
    ("move-pane", Some("movep")),
    ("move-window", Some("movew")),
    ("new-pane", Some("newp")),
    ("new-session", Some("new")),
    ("new-window", Some("neww")),
    ("next-layout", Some("nextl")),
    ("next-window", Some("next")),
    ("paste-buffer", Some("pasteb")),
    ("pipe-pane", Some("pipep")),
    ("previous-layout", Some("prevl")),
    ("previous-window", Some("prev")),
    ("refresh-client", Some("refresh")),
    ("rename-session", Some("rename")),
    ("rename-window", Some("renamew")),
    ("resize-pane", Some("resizep")),
    ("resize-window", Some("resizew")),
    ("respawn-pane", Some("respawnp")),
    ("respawn-window", Some("respawnw")),
    ("rotate-window", Some("rotatew")),
    ("run-shell", Some("run")),
    ("save-buffer", Some("saveb")),
    ("select-layout", Some("selectl")),
    ("select-pane", Some("selectp")),
    ("select-window", Some("selectw")),
    ("send-keys", Some("send")),
    ("send-prefix", None),
    ("server-access", None),
    ("set-buffer", Some("setb")),
    ("set-environment", Some("setenv")),
    ("set-hook", None),
    ("set-option", Some("set")),
    ("set-window-option", Some("setw")),
    ("show-buffer", Some("showb")),
    ("show-environment", Some("showenv")),
    ("show-hooks", None),
    ("show-messages", Some("showmsgs")),
    ("show-options", Some("show")),
    ("show-prompt-history", Some("showphist")),
    ("show-window-options", Some("showw")),
    ("source-file", Some("source")),
    ("split-window", Some("splitw")),
    ("start-server", Some("start")),
    ("suspend-client", Some("suspendc")),
    ("swap-pane", Some("swapp")),
    ("swap-window", Some("swapw")),
    ("switch-client", Some("switchc")),
    ("switch-mode", None),
    ("unbind-key", Some("unbind")),
    ("unlink-window", Some("unlinkw")),
    ("wait-for", Some("wait")),
];

/// How tmux resolves a command name.
#[derive(Debug, PartialEq, Eq)]
pub enum Resolved {
    Command(&'static str),
    /// A prefix of several commands: tmux refuses it.
    Ambiguous(Vec<&'static str>),
    Unknown,
}

/// tmux's `cmd_find`: an exact alias wins; otherwise a name that starts with `name`, and more
/// than one such is ambiguous (even when one of them is exact, if an earlier one matched).
pub fn resolve(name: &str) -> Resolved {
    let mut found: Option<&'static str> = None;
    let mut ambiguous = false;
    for (full, alias) in TMUX_COMMANDS {
        if *alias == Some(name) {
            return Resolved::Command(full);
        }
        if !full.starts_with(name) {
            continue;
        }
        if found.is_some() {
            ambiguous = true;
        }
        found = Some(full);
        if *full == name {
            break;
        }
    }
    if ambiguous {
        return Resolved::Ambiguous(
            TMUX_COMMANDS
                .iter()
                .map(|(f, _)| *f)
                .filter(|f| f.starts_with(name))
                .collect(),
        );
    }
    found.map_or(Resolved::Unknown, Resolved::Command)
}

/// Read-only tmux commands: (name, getopt spec, a flag that must be present).
const READ_ONLY: &[(&str, &str, Option<char>)] = &[
    ("list-buffers", "F:f:O:r", None),
    ("list-clients", "F:f:O:rt:", None),
    ("list-commands", "F:", None),
    ("list-keys", "1aNP:T:", None),
    ("list-panes", "asF:f:O:rt:", None),
    ("list-sessions", "F:f:O:r", None),
    ("list-windows", "F:f:O:at:r", None),
    ("show-options", "AgF:Hpqst:vw", None),
    ("show-window-options", "F:gvt:", None),
    ("has-session", "t:", None),
    ("display-message", "aCc:d:lNpt:F:v", Some('p')),
    ("capture-pane", "ab:CeE:FHJLMNpPqRS:Tt:", Some('p')),
];

/// tmux commands recorded as destructive intents (also without `--guard`).
fn destroying(name: &str, flags: &[(char, String)], positional: usize) -> bool {
    let k = flags.iter().any(|(f, _)| *f == 'k');
    match name {
        "kill-pane" | "kill-window" | "kill-session" | "kill-server" | "swap-pane"
        | "swap-window" | "break-pane" | "join-pane" | "move-pane" | "source-file"
        | "run-shell" | "if-shell" | "set-hook" | "command-prompt" | "confirm-before"
        | "send-keys" | "pipe-pane" | "display-popup" | "display-menu" | "bind-key"
        | "respawn-pane" | "respawn-window" => !name.starts_with("respawn") || k,
        "unlink-window" | "move-window" | "link-window" => k,
        "new-window" | "split-window" | "new-pane" => k || positional > 0,
        _ => false,
    }
}

/// Parses getopt-style flags per `spec` (`x:` takes a value). Returns the flags, the index
/// of the first positional argument, and an unknown flag if one was met.
fn getopt(args: &[String], spec: &str) -> (Vec<(char, String)>, usize, Option<char>) {
    let takes = |ch: char| -> Option<bool> {
        let i = spec.find(ch)?;
        Some(spec[i + ch.len_utf8()..].starts_with(':'))
    };
    let mut flags = Vec::new();
    let mut j = 0;
    while j < args.len() {
        let a = args[j].as_str();
        if a == "--" {
            j += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        let chars: Vec<char> = a.chars().skip(1).collect();
        let mut k = 0;
        while k < chars.len() {
            let ch = chars[k];
            match takes(ch) {
                None => return (flags, j, Some(ch)),
                Some(true) => {
                    let rest: String = chars[k + 1..].iter().collect();
                    let val = if rest.is_empty() {
                        j += 1;
                        args.get(j).cloned().unwrap_or_default()
                    } else {
                        rest
                    };
                    flags.push((ch, val));
                    break;
                }
                Some(false) => {
                    flags.push((ch, String::new()));
                    k += 1;
                }
            }
        }
        j += 1;
    }
    (flags, j.min(args.len()), None)
}

fn texts(words: &[Word]) -> Vec<String> {
    words.iter().map(|w| w.text.clone()).collect()
}

/// A tmux format that runs a shell command (`#(...)`) or expands an option's value as a
/// format (`#{E:...}`, `#{T:...}`), which may hold one.
fn runs_commands(arg: &str) -> bool {
    if arg.contains("#(") {
        return true;
    }
    let mut rest = arg;
    while let Some(i) = rest.find("#{") {
        rest = &rest[i + 2..];
        let mods: String = rest.chars().take_while(|c| *c != '}').collect();
        if let Some((m, _)) = mods.split_once(':')
            && m.split(';').any(|x| x.starts_with(['E', 'e', 'T', 't']))
        {
            return true;
        }
    }
    false
}

fn is_pane_id(t: &str) -> bool {
    t.strip_prefix('%')
        .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
}

/// Whether `t` is a shell variable name (`[A-Za-z_][A-Za-z0-9_]*`).
fn is_identifier(t: &str) -> bool {
    let mut c = t.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// Why a builtin that takes a variable *name* (`read`, `printf -v`, `wait -p`, `mapfile`,
/// `test -v`/`-R`, `declare` and kin, `unset`, `getopts`) is given one the guard cannot see,
/// if it is. The thirty-sixth round: bash evaluates a subscript in such a name as arithmetic
/// (`x='a[$(...)]'; read -r "$x"` runs the substitution), and a name only known at run time
/// may be a prompt or hook variable (`printf -v "$n"` with `n=PS4`). So a name operand must be
/// a literal identifier; a word only known at run time where an option may stand (it may be
/// `-v NAME`, `-pNAME`, `-a NAME`) is denied, and for `test`/`[` a run-time word that may
/// split into words (unquoted) or be the operator before a run-time or subscripted operand.
fn name_operand_denial(base: &str, rest: &[Word]) -> Option<String> {
    // `$#`, `$?`, `$$`, `$!` hold numbers.
    let opaque = |w: &Word| w.dynamic && !matches!(w.text.as_str(), "$#" | "$?" | "$$" | "$!");
    let name_ok = |w: &Word| !w.dynamic && is_identifier(&w.text);
    // A run-time word whose text starts with a literal character other than `-`/`+` (`y=$x`,
    // `%s $x`) cannot be an option.
    let may_be_option = |w: &Word| {
        opaque(w)
            && !w
                .text
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || "%\\ .,:_=/#".contains(c))
    };
    let bad_name = |w: &Word| {
        Some(format!(
            "`{base}` is given the variable name `{}`, which is not a literal name: bash \
             evaluates a subscript in a name (`a[$(...)]`) as arithmetic, which runs commands \
             the guard cannot read, and a name only known at run time may be a prompt variable",
            w.text
        ))
    };
    let option_unknown = |w: &Word| {
        Some(format!(
            "`{base}` is given `{}` where an option may stand: a value only known at run time \
             may be an option naming a variable (`-v a[$(...)]`), which runs commands the guard \
             cannot read",
            w.text
        ))
    };
    // Reads the options of a builtin using bash's `internal_getopt`: `takes` lists the letters
    // with a value, `names` those whose value is a variable name. Returns the index of the
    // first operand.
    let options = |takes: &str, names: &str| -> Result<usize, Option<String>> {
        let mut k = 0;
        while k < rest.len() {
            let w = &rest[k];
            if may_be_option(w) {
                return Err(option_unknown(w));
            }
            let t = w.text.as_str();
            if t == "--" {
                return Ok(k + 1);
            }
            if !(t.starts_with('-') && t.len() > 1) {
                return Ok(k);
            }
            let letters: Vec<char> = t[1..].chars().collect();
            for (j, &l) in letters.iter().enumerate() {
                if takes.contains(l) {
                    let attached: String = letters[j + 1..].iter().collect();
                    let value = if attached.is_empty() {
                        k += 1;
                        rest.get(k).cloned()
                    } else {
                        Some(Word {
                            text: attached,
                            dynamic: w.dynamic,
                            ..Word::default()
                        })
                    };
                    if names.contains(l)
                        && let Some(v) = value
                        && !name_ok(&v)
                    {
                        return Err(bad_name(&v));
                    }
                    break;
                }
            }
            k += 1;
        }
        Ok(k)
    };
    // `declare NAME=value`: the name must be literal, the value may be anything.
    let operands_are_names = |from: usize, functions: bool| {
        rest[from.min(rest.len())..].iter().find_map(|w| {
            let name = w.text.split_once('=').map_or(w.text.as_str(), |(n, _)| n);
            let name = name.strip_suffix('+').unwrap_or(name);
            let ok = if functions {
                !opaque(w)
            } else {
                is_identifier(name)
            };
            if ok { None } else { bad_name(w) }
        })
    };
    match base {
        "read" => match options("adinNptu", "a") {
            Err(why) => why,
            Ok(k) => rest[k..].iter().find(|w| !name_ok(w)).and_then(bad_name),
        },
        "mapfile" | "readarray" => match options("dnOsuCc", "") {
            Err(why) => why,
            Ok(k) => rest[k..].iter().find(|w| !name_ok(w)).and_then(bad_name),
        },
        "wait" => options("p", "p").err().flatten(),
        "printf" => {
            // A format only known at run time may be `-vNAME`.
            options("v", "v").err().flatten()
        }
        "declare" | "typeset" | "local" | "export" | "readonly" | "unset" => {
            let k = match options("", "") {
                Err(why) => return why,
                Ok(k) => k,
            };
            let functions = rest[..k]
                .iter()
                .any(|w| w.text.starts_with(['-', '+']) && w.text.contains(['f', 'F']));
            operands_are_names(k, functions)
        }
        "getopts" => rest.get(1).filter(|w| !name_ok(w)).and_then(bad_name),
        "test" | "[" => {
            let args = match rest.split_last() {
                Some((last, init)) if base == "[" && last.text == "]" => init,
                _ => rest,
            };
            for (k, w) in args.iter().enumerate() {
                let next = args.get(k + 1);
                if !w.dynamic
                    && matches!(w.text.as_str(), "-v" | "-R")
                    && let Some(v) = next
                    && !name_ok(v)
                {
                    return bad_name(v);
                }
                if opaque(w) && w.split {
                    return Some(format!(
                        "`{base}` is given `{}` unquoted: its value may split into an operator \
                         and a name (`-v a[$(...)]`), whose subscript runs commands the guard \
                         cannot read",
                        w.text
                    ));
                }
                if opaque(w)
                    && let Some(v) = next
                    && (opaque(v) || v.text.contains('['))
                {
                    return option_unknown(w);
                }
            }
            None
        }
        _ => None,
    }
}

/// The first variable name in an arithmetic expression, if any (`0x1f`, `16#ff` are numbers).
fn arith_name(a: &str) -> Option<String> {
    let c: Vec<char> = a.chars().collect();
    let mut i = 0;
    while i < c.len() {
        if c[i].is_ascii_digit() {
            // A number, with its base or hex digits.
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '#' || c[i] == '_') {
                i += 1;
            }
        } else if c[i].is_ascii_alphabetic() || c[i] == '_' {
            let start = i;
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            return Some(c[start..i].iter().collect());
        } else if c[i] == '$' && i + 1 < c.len() && !c[i + 1].is_whitespace() {
            return Some(format!("${}", c[i + 1]));
        } else {
            i += 1;
        }
    }
    None
}

/// What `export`, `declare`/`typeset`/`local`/`readonly`, `env` and `set` may not do to the
/// environment: set a variable that is not [`env_is_harmless`] (a name exported by `export`,
/// `-x`, or `env`; any other assignment as a shell one, [`env_assignment_denial`]), export
/// functions (`-f`), make a name a reference to another (`-n`), or export every assignment
/// (`set -a`, `set -o allexport`).
fn exported_variable_denial(base: &str, rest: &[Word]) -> Option<String> {
    match base {
        "export" | "declare" | "typeset" | "local" | "readonly" => {
            let opts = |c: char| {
                rest.iter().any(|w| {
                    (w.text.starts_with('-') || w.text.starts_with('+')) && w.text[1..].contains(c)
                })
            };
            if opts('f') && (base == "export" || opts('x')) {
                return Some(format!(
                    "`{base} -f` exports a function to every program's shell"
                ));
            }
            if opts('n') && base != "export" {
                return Some(format!(
                    "`{base} -n` makes a name a reference to another variable, which the guard \
                     does not follow"
                ));
            }
            let exported = base == "export" || opts('x');
            rest.iter()
                .filter(|w| !w.text.starts_with('-') && !w.text.starts_with('+'))
                .filter(|w| exported || w.text.contains('='))
                .find_map(|w| env_assignment_denial(w, exported))
        }
        "env" => {
            let mut k = 0;
            while k < rest.len() {
                let t = rest[k].text.as_str();
                if is_assignment(t) {
                    if let Some(why) = env_assignment_denial(&rest[k], true) {
                        return Some(why);
                    }
                } else if matches!(t, "-u" | "-C" | "--unset" | "--chdir") {
                    k += 1;
                } else if !t.starts_with('-') || t == "-" || t == "--" {
                    break;
                }
                k += 1;
            }
            None
        }
        "set" => rest
            .iter()
            .enumerate()
            .any(|(k, w)| {
                let t = w.text.as_str();
                (t.starts_with('-') && !t.starts_with("--") && t.contains('a'))
                    || (t == "-o" && rest.get(k + 1).is_some_and(|v| v.text == "allexport"))
            })
            .then(|| "`set -a` exports every variable the line assigns to every program".into()),
        _ => None,
    }
}

/// `set` or a shell's options that turn on the history or its expansion: `-H` (in a cluster
/// too), `-o history`, `-o histexpand`.
fn turns_on_history(rest: &[Word]) -> bool {
    rest.iter().enumerate().any(|(k, w)| {
        let t = w.text.as_str();
        (t.starts_with('-') && !t.starts_with("--") && t.contains('H'))
            || (matches!(t, "-o" | "-O")
                && rest
                    .get(k + 1)
                    .is_some_and(|v| matches!(v.text.as_str(), "history" | "histexpand")))
            || w.dynamic && k > 0 && matches!(rest[k - 1].text.as_str(), "-o" | "-O")
    })
}

/// Variables whose value a shell or a common program runs as code (or that choose which
/// code runs).
fn code_var(word: &str) -> Option<String> {
    let (name, _) = word.split_once('=')?;
    let name = name.trim_end_matches('+');
    if !is_assignment(word) {
        return None;
    }
    let code = matches!(
        name,
        "PS0"
            | "PS1"
            | "PS2"
            | "PS3"
            | "PS4"
            | "PROMPT_COMMAND"
            | "BASH_ENV"
            | "ENV"
            | "SHELLOPTS"
            | "BASHOPTS"
            | "LESSOPEN"
            | "LESSCLOSE"
            | "LESS"
            | "PAGER"
            | "MANPAGER"
            | "GIT_PAGER"
            | "EDITOR"
            | "VISUAL"
            | "FCEDIT"
            | "GIT_EDITOR"
            | "GIT_SEQUENCE_EDITOR"
            | "GIT_SSH"
            | "GIT_SSH_COMMAND"
            | "GIT_EXTERNAL_DIFF"
            | "GIT_ASKPASS"
            | "SSH_ASKPASS"
            | "GIT_CONFIG"
            | "GIT_CONFIG_GLOBAL"
            | "GIT_CONFIG_SYSTEM"
            | "GIT_CONFIG_PARAMETERS"
            | "GIT_CONFIG_COUNT"
            | "GIT_EXEC_PATH"
            | "LD_PRELOAD"
            | "LD_AUDIT"
            | "LD_LIBRARY_PATH"
            | "PYTHONSTARTUP"
            | "PYTHONBREAKPOINT"
            | "BROWSER"
            | "PERL5DB"
            | "SYSTEMD_PAGER"
            | "SYSTEMD_EDITOR"
            | "SUDO_EDITOR"
            | "MAILCAPS"
            | "PERL5OPT"
            | "NODE_OPTIONS"
            | "RUBYOPT"
            | "PYTHONINSPECT"
            | "PROMPT_DIRTRIM"
    ) || name.starts_with("BASH_FUNC_")
        || name.starts_with("GIT_CONFIG_KEY_")
        || name.starts_with("GIT_CONFIG_VALUE_");
    code.then(|| {
        format!("sets {name}, whose value a shell or a program runs as code the guard cannot read")
    })
}

/// Environment variables programs read only as plain data (no options, no command, no path
/// they load code from): the only ones a command, `env`, `export` or `declare -x` may set.
/// `LC_*` counts too, and a few take only plain values ([`env_value_is_plain`]).
const HARMLESS_ENV: &[&str] = &[
    "CI",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "COLORTERM",
    "TERM",
    "COLUMNS",
    "LINES",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "IFS",
    "DEBUG",
    "VERBOSE",
    "LOG_LEVEL",
    "PORT",
    "HOST",
    "NODE_ENV",
    "NODE_NO_WARNINGS",
    "RUST_LOG",
    "RUST_LOG_STYLE",
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
    "RUST_TEST_THREADS",
    "RUST_TEST_NOCAPTURE",
    "RUST_MIN_STACK",
    "RAYON_NUM_THREADS",
    "OMP_NUM_THREADS",
    "CARGO_TERM_COLOR",
    "CARGO_TERM_VERBOSE",
    "CARGO_TERM_QUIET",
    "CARGO_INCREMENTAL",
    "CARGO_BUILD_JOBS",
    "CARGO_TARGET_DIR",
    "CARGO_NET_OFFLINE",
    "INSTA_UPDATE",
    "INSTA_FORCE_PASS",
    "UPDATE_EXPECT",
    "TRYBUILD",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "PYTHONFAULTHANDLER",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_TERMINAL_PROMPT",
    "GIT_OPTIONAL_LOCKS",
    "GOOS",
    "GOARCH",
    "CGO_ENABLED",
    "GO111MODULE",
    "DEBIAN_FRONTEND",
    "SOURCE_DATE_EPOCH",
    "HUSKY",
];

/// A value of `MAKEFLAGS`/`GNUMAKEFLAGS`/`MFLAGS` or `RUSTFLAGS`/`RUSTDOCFLAGS` that only sets
/// jobs and quietness, or lint levels and code generation that loads nothing.
fn env_value_is_plain(name: &str, value: &str) -> bool {
    let toks: Vec<&str> = value.split_whitespace().collect();
    match name {
        "MAKEFLAGS" | "GNUMAKEFLAGS" | "MFLAGS" => toks.iter().all(|t| {
            let jobs = t
                .strip_prefix("-j")
                .or_else(|| t.strip_prefix("--jobs="))
                .or_else(|| t.strip_prefix('j'))
                .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()));
            jobs || matches!(*t, "-s" | "s" | "--silent" | "-k" | "--no-print-directory")
        }),
        "RUSTFLAGS" | "RUSTDOCFLAGS" => {
            let ident = |v: &str| {
                !v.is_empty()
                    && v.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':'))
            };
            let codegen = |v: &str| {
                let (k, val) = v.split_once('=').unwrap_or((v, ""));
                matches!(
                    k,
                    "opt-level"
                        | "debuginfo"
                        | "target-cpu"
                        | "codegen-units"
                        | "overflow-checks"
                        | "debug-assertions"
                        | "panic"
                        | "lto"
                        | "strip"
                        | "force-frame-pointers"
                ) && val.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            };
            let mut k = 0;
            while k < toks.len() {
                let t = toks[k];
                let (flag, attached) = if t.starts_with("--") {
                    (t, "")
                } else if t.len() > 2 && t.starts_with('-') {
                    t.split_at(2)
                } else {
                    (t, "")
                };
                let value = if attached.is_empty() {
                    k += 1;
                    toks.get(k).copied().unwrap_or("")
                } else {
                    attached
                };
                let ok = match flag {
                    "-D" | "-W" | "-A" | "-F" | "--cap-lints" | "--cfg" => ident(value),
                    "-C" => codegen(value),
                    _ => false,
                };
                if !ok {
                    return false;
                }
                k += 1;
            }
            true
        }
        _ => false,
    }
}

/// Whether setting `name` (to `value`, `None` when only exported) can change only data a
/// program reads: a name of [`HARMLESS_ENV`], `LC_*`, or a plain value of
/// [`env_value_is_plain`]. Every other variable may be an option list (`MAKEFLAGS`,
/// `TAR_OPTIONS`, `ZIPOPT`, `RUSTFLAGS`), a command (`RUSTC_WRAPPER`,
/// `CARGO_TARGET_*_RUNNER`, `npm_config_script_shell`) or a path code is loaded from.
fn env_is_harmless(name: &str, value: Option<(&str, bool)>) -> bool {
    HARMLESS_ENV.contains(&name)
        || name
            .strip_prefix("LC_")
            .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_uppercase()))
        || value.is_some_and(|(v, dynamic)| !dynamic && env_value_is_plain(name, v))
}

/// A shell variable of the line's own: named with a lower-case letter (programs' variables
/// are upper case) and not of a package manager that reads lower-case ones (`npm_config_*`).
fn shell_local_name(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    name.chars().any(|c| c.is_ascii_lowercase())
        && !["npm_", "yarn_", "pnpm_", "bun_", "npm", "bundle_"]
            .iter()
            .any(|p| l.starts_with(p))
}

/// An assignment (`NAME=value`, or `NAME` alone for `export NAME`) that may change what a
/// program runs: denied unless [`env_is_harmless`]. `exported`: the value reaches programs
/// (a prefix `NAME=v cmd`, `env`, `export`, `declare -x`); otherwise it is a shell
/// assignment, which may also set a shell variable of the line's own ([`shell_local_name`])
/// (a variable already exported would pass its new value on: upper-case names are judged).
fn env_assignment_denial(w: &Word, exported: bool) -> Option<String> {
    let (name, value) = match w.text.split_once('=') {
        Some((n, v)) => (n.trim_end_matches('+'), Some((v, w.dynamic))),
        None => (w.text.as_str(), None),
    };
    if name.is_empty()
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        || env_is_harmless(name, value)
        || (!exported && shell_local_name(name))
    {
        return None;
    }
    Some(format!(
        "sets `{name}`, which is not a variable known to be plain data: programs read \
         variables as options or commands (`MAKEFLAGS`, `TAR_OPTIONS`, `RUSTC_WRAPPER`, \
         `CARGO_TARGET_*_RUNNER`, ...), so only a short list (`RUST_LOG`, `NO_COLOR`, `CI`, \
         `LANG`, `LC_*`, ...) may be set{}",
        if exported {
            ""
        } else {
            "; name a shell variable of your own in lower case"
        }
    ))
}

/// A git configuration key whose value git never runs (`user.name`, `color.ui`, ...).
fn git_key_is_plain(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    [
        "user.",
        "color.",
        "init.",
        "pull.",
        "push.",
        "advice.",
        "log.",
        "status.",
        "branch.",
        "fetch.",
        "rerere.",
        "safe.",
        "commit.verbose",
        "merge.conflictstyle",
        "core.autocrlf",
        "core.eol",
        "core.filemode",
        "core.ignorecase",
        "core.safecrlf",
        "core.whitespace",
        "core.quotepath",
        "core.symlinks",
    ]
    .iter()
    .any(|p| k.starts_with(p))
        && ![
            "command", "editor", "pager", "program", "helper", "cmd", "driver", "tool", "hook",
        ]
        .iter()
        .any(|w| k.contains(w))
}

/// The length of a redirection starting at `c` that discards or joins output: `>/dev/null`,
/// `&>/dev/null`, `>&1`, `>&2` (a leading fd digit is an ordinary character before it).
fn discarding_redirect(c: &[char]) -> Option<usize> {
    let mut k = 0;
    if c.first() == Some(&'&') {
        k += 1;
    }
    if c.get(k) != Some(&'>') {
        return None;
    }
    k += 1;
    if c.get(k) == Some(&'>') {
        k += 1;
    }
    let rest: String = c[k..].iter().collect();
    let trimmed = rest.trim_start();
    let pad = rest.len() - trimmed.len();
    for target in ["/dev/null", "&1", "&2"] {
        if let Some(after) = trimmed.strip_prefix(target)
            && after
                .chars()
                .next()
                .is_none_or(|ch| matches!(ch, ' ' | '\t' | '\n' | '|'))
        {
            return Some(k + pad + target.len());
        }
    }
    None
}

/// A span's text holds no separator, substitution, redirection or comment: what the lexer
/// took as one command is one command to any shell. Inside single quotes every character is
/// literal (`-F '#{pane_id} #{pane_pid}'`); inside double quotes all but `$`, backquotes and
/// `\`; a newline is never plain.
fn plain_span(c: &[char]) -> bool {
    let (mut single, mut double) = (false, false);
    let mut k = 0;
    while k < c.len() {
        let ch = c[k];
        if ch == '\n' {
            return false;
        }
        if single {
            single = ch != '\'';
            k += 1;
            continue;
        }
        match ch {
            '\\' => k += 1,
            '\'' if !double => single = true,
            '"' => double = !double,
            '`' | '$' => return false,
            // Output thrown away or joined (`2>/dev/null`, `&>/dev/null`, `2>&1`) writes
            // nothing anyone reads.
            '&' | '>' if !double && discarding_redirect(&c[k..]).is_some() => {
                k += discarding_redirect(&c[k..]).unwrap_or(1);
                continue;
            }
            '(' | ')' | '<' | '>' | '|' | '&' | ';' if !double => return false,
            '#' if !double && (k == 0 || c[k - 1].is_whitespace()) => return false,
            _ => {}
        }
        k += 1;
    }
    !single && !double
}

/// Whether a GNU sed script only edits text: no `e` (run a command), no `w`/`W` (write a
/// file), no `s///e` or `s///w`. Unknown commands count as not plain.
fn sed_script_is_plain(script: &str) -> bool {
    let c: Vec<char> = script.chars().collect();
    let n = c.len();
    let mut i = 0;
    // Skips a delimited part (`/re/`), from the char after the opening delimiter.
    let skip_delim = |mut j: usize, d: char| -> usize {
        while j < n && c[j] != d {
            if c[j] == '\\' {
                j += 1;
            }
            j += 1;
        }
        j + 1
    };
    while i < n {
        let ch = c[i];
        match ch {
            ' ' | '\t' | '\n' | ';' | '{' | '}' | '!' | ',' | '$' | '~' | '+' => i += 1,
            '0'..='9' => i += 1,
            '/' => i = skip_delim(i + 1, '/'),
            '\\' if i + 1 < n => i = skip_delim(i + 2, c[i + 1]),
            's' | 'y' if i + 1 < n => {
                let d = c[i + 1];
                if d == '\n' || d == '\\' {
                    return false;
                }
                i = skip_delim(i + 2, d);
                i = skip_delim(i, d);
                if ch == 's' {
                    while i < n && !matches!(c[i], ';' | '\n' | '}') {
                        if matches!(c[i], 'e' | 'w' | 'W') {
                            return false;
                        }
                        i += 1;
                    }
                }
            }
            'a' | 'i' | 'c' | 'r' | 'R' | 'b' | 't' | 'T' | ':' | '#' => {
                // Text, a file to read or a label, to the end of the line; text lines of
                // `a\`, `i\`, `c\` go on while they end in a backslash.
                loop {
                    while i < n && c[i] != '\n' {
                        i += 1;
                    }
                    if matches!(ch, 'a' | 'i' | 'c') && i > 0 && i < n && c[i - 1] == '\\' {
                        i += 1;
                        continue;
                    }
                    break;
                }
            }
            'p' | 'P' | 'd' | 'D' | 'q' | 'Q' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | 'l'
            | '=' | 'z' | 'F' | 'L' => i += 1,
            _ => return false,
        }
    }
    true
}

/// `\xHH`, `\NNN`, `\uHHHH` and `\UHHHHHHHH` decoded: what a `$'...'` word gives a program.
fn decode_escapes(s: &str) -> String {
    let c: Vec<char> = s.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < c.len() {
        let (radix, from, max) = match (c[i], c.get(i + 1)) {
            ('\\', Some('x')) => (16, i + 2, 2),
            ('\\', Some('u')) => (16, i + 2, 4),
            ('\\', Some('U')) => (16, i + 2, 8),
            ('\\', Some('0'..='7')) => (8, i + 1, 3),
            _ => {
                out.push(c[i]);
                i += 1;
                continue;
            }
        };
        let mut j = from;
        let mut v: u32 = 0;
        while j < c.len() && j - from < max && c[j].is_digit(radix) {
            v = v
                .saturating_mul(radix)
                .saturating_add(c[j].to_digit(radix).unwrap_or(0));
            j += 1;
        }
        match char::from_u32(v).filter(|_| j > from) {
            Some(ch) => {
                out.push(ch);
                i = j;
            }
            None => {
                out.push(c[i]);
                i += 1;
            }
        }
    }
    out
}

/// A command word whose name is only known when a shell runs it: it holds `$name`, `${...}`,
/// `$(...)` or a backquote (not a literal `$` at the end of a regex, `a$`).
fn runtime_name(w: &str) -> bool {
    w.contains('`')
        || w.match_indices('$').any(|(i, _)| {
            w[i + 1..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || "_{(@*#?!$-".contains(c))
        })
}

/// Why an argument word of a program the guard does not know is shell code the guard will not
/// pass, if it is (the ninth round's generic rule). A program may hand any argument to a
/// shell (`split --filter='...'`, `apt-get -o APT::Update::Pre-Invoke::='...'`, `--hook
/// '...'`), so the word, what follows its first `=`, and the word without a leading `!` (git
/// aliases) are each read as a command line; it is code when a command in it has a name only
/// known when it runs (`$x`, `${x}`, `$(...)`, a backquote), is tmux, is a shell or an
/// interpreter given code (`sh -c`, `python3 -c`, `eval`) or reading a pipe, or when it holds
/// arithmetic on a variable or `${!x}`; a command behind a wrapper (`nohup`, `timeout`,
/// `sudo` ...) counts as well. `expansions`: whether the `$` and backquotes in `text` reach
/// the program as text (quoted or escaped); when they are the outer shell's own (already
/// checked, and replaced by values before the program runs), only the command words count.
/// Everyday words stay data: `-m "fix; stuff"`, `'a|b'`, `'s/a/b/;s/c/d/'`, `"$PWD:/app"`.
fn code_in_word(text: &str, expansions: bool, depth: usize) -> Option<String> {
    if !text.contains(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '&' | '$' | '`')) {
        return None;
    }
    if depth > MAX_DEPTH {
        return Some("shell code nested too deep to be checked".into());
    }
    let mut cands = vec![text];
    if let Some((_, v)) = text.split_once('=') {
        cands.push(v);
    }
    for cand in cands {
        let cand = cand.strip_prefix('!').unwrap_or(cand);
        let lexed = lex(cand);
        for cmd in &lexed.cmds {
            let words = &cmd.words;
            let mut k = 0;
            while k < words.len()
                && (is_assignment(&words[k].text) || KEYWORDS.contains(&words[k].text.as_str()))
            {
                k += 1;
            }
            // After a wrapper, any later word may be the command it runs.
            let mut after_wrapper = false;
            for (j, w) in words.iter().enumerate().skip(k) {
                if j != k && !after_wrapper {
                    break;
                }
                if w.text.starts_with('-') {
                    continue;
                }
                if expansions && w.dynamic && runtime_name(&w.text) {
                    return Some(format!(
                        "shell code whose command `{}` is only known when it runs",
                        w.text
                    ));
                }
                let b = basename(&w.text);
                let later = &words[j + 1..];
                let only_flags = later.iter().all(|x| x.text.starts_with('-'));
                if b == "tmux" {
                    return Some("shell code that runs tmux".into());
                }
                if b == "eval" {
                    return Some("shell code that runs `eval`".into());
                }
                if SHELLS.contains(&b)
                    && later.iter().any(|x| {
                        x.text.starts_with('-') && !x.text.starts_with("--") && x.text.contains('c')
                    })
                {
                    return Some(format!("shell code that runs `{b} -c`"));
                }
                if is_interpreter(b) && later.iter().any(|x| inline_code_flag(&x.text)) {
                    return Some(format!("shell code that runs `{b}` with inline code"));
                }
                if (SHELLS.contains(&b)
                    || (is_interpreter(b) && !matches!(b, "sed" | "gsed" | "awk" | "gawk")))
                    && only_flags
                    && matches!(cmd.input, Input::Pipe)
                {
                    return Some(format!("shell code that pipes a program to `{b}`"));
                }
                if WRAPPERS.iter().any(|(x, ..)| *x == b)
                    || SHELL_LIKE.contains(&b)
                    || matches!(b, "busybox" | "start-stop-daemon")
                {
                    after_wrapper = true;
                } else if !after_wrapper {
                    break;
                }
            }
        }
        if expansions {
            if let Some(a) = lexed.arith.iter().find(|a| arith_name(a).is_some()) {
                return Some(format!("shell code with arithmetic on a variable (`{a}`)"));
            }
            if let Some(e) = lexed.evals.first() {
                return Some(format!("shell code that expands `{e}` as a name"));
            }
            for sub in &lexed.subs {
                if let Some(why) = code_in_word(sub, true, depth + 1) {
                    return Some(why);
                }
            }
        }
    }
    None
}

/// `t` is the long option `full` (`--opt` or `--opt=value`), or a prefix of it at least `min`
/// characters long, which GNU getopt takes for the whole option when it is unambiguous.
fn long_opt(t: &str, full: &str, min: usize) -> bool {
    let name = t.split('=').next().unwrap_or("");
    name.starts_with("--") && name.len() >= min && full.starts_with(name)
}

/// An apt `-o Key=Value` that cannot make apt run a command: a key from a short list of plain
/// ones (`Acquire::Retries`, `APT::Get::Assume-Yes`, `Debug::...`, ...), and dpkg options only
/// when they are `--force-...`. Everything else (`*::Pre-Invoke`, `*::Post-Invoke*`,
/// `DPkg::Pre-Install-Pkgs`, `Dir::Bin::*`, `Acquire::http::Proxy-Auto-Detect`,
/// `DPkg::Tools::*`, `Dir::Etc::*` ...) may name a command or a file of commands.
fn apt_option_is_plain(kv: &str) -> bool {
    let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
    let k = key.trim_end_matches(':').to_ascii_lowercase();
    if k == "dpkg::options" {
        return value.starts_with("--force-") && !value.contains(char::is_whitespace);
    }
    [
        "invoke", "pkgs", "dir", "detect", "method", "path", "command", "tool", "bin", "sandbox",
        "script", "hook", "exec", "pager", "program", "options",
    ]
    .iter()
    .all(|b| !k.contains(b))
        && [
            "acquire::",
            "apt::get::",
            "apt::install-recommends",
            "apt::install-suggests",
            "apt::default-release",
            "apt::color",
            "apt::architecture",
            "debug::",
            "quiet",
            "dpkg::use-pty",
            "dpkg::progress-fancy",
            "dpkg::lock::timeout",
        ]
        .iter()
        .any(|p| k.starts_with(p))
}

/// [`code_in_word`] for one word of a command line, as the program receives it.
fn arg_code(w: &Word) -> Option<String> {
    let decoded;
    let text = if w.undecoded {
        decoded = decode_escapes(&w.text);
        decoded.as_str()
    } else {
        w.text.as_str()
    };
    code_in_word(text, !w.dynamic || w.lit || w.undecoded, 0)
}

/// `-S`-style option values of a command (`-o val`, `-oval`, `--opt=val`, `--opt val`).
fn option_values<'a>(words: &'a [Word], short: char, long: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut j = 1;
    while j < words.len() {
        let w = words[j].text.as_str();
        if let Some(v) = w.strip_prefix(long).and_then(|v| v.strip_prefix('=')) {
            out.push(v);
        } else if w == long {
            if let Some(v) = words.get(j + 1) {
                out.push(v.text.as_str());
            }
        } else if w.starts_with('-')
            && !w.starts_with("--")
            && let Some(k) = w.find(short)
        {
            let v = &w[k + short.len_utf8()..];
            if v.is_empty() {
                if let Some(v) = words.get(j + 1) {
                    out.push(v.text.as_str());
                }
            } else {
                out.push(v);
            }
        }
        j += 1;
    }
    out
}

impl Scan {
    fn line(&mut self, src: &str, ctx: Ctx) {
        if ctx.depth == 0 {
            self.line = src.to_string();
            self.chars = src.chars().collect();
        }
        if ctx.depth > MAX_DEPTH {
            if mentions_tmux(src) {
                self.findings.push(Finding::deny(
                    "shell",
                    vec![src.to_string()],
                    "nested too deep to be checked".into(),
                ));
            }
            return;
        }
        let lexed = lex(src);
        if ctx.depth == 0 {
            let lower = src.to_ascii_lowercase();
            if let Some(name) = KERNEL_CONTROL_FILES[..6]
                .iter()
                .find(|k| lower.contains(*k))
            {
                self.findings.push(Finding::deny(
                    "shell",
                    vec![name.to_string()],
                    format!(
                        "the line names `{name}`, a kernel control file whose write can signal, \
                         kill or freeze tmux"
                    ),
                ));
            }
        }
        // `tmux() { ...; }` or `function tmux`: later `tmux` words run the function.
        let squeezed: String = src.chars().filter(|c| !c.is_whitespace()).collect();
        if squeezed.contains("tmux()")
            || src
                .split_whitespace()
                .collect::<Vec<_>>()
                .windows(2)
                .any(|w| w[0] == "function" && mentions_tmux(w[1]))
        {
            self.note_env_change("defines a shell function named tmux".into());
            self.findings.push(Finding::deny(
                "shell",
                vec![src.to_string()],
                "defines a shell function named like tmux, which later `tmux` words would run"
                    .into(),
            ));
        }
        if let Some(why) = &lexed.opaque {
            self.findings.push(Finding::deny(
                "shell",
                vec![src.to_string()],
                format!("the command line cannot be parsed ({why}), so what it runs is unknown"),
            ));
        }
        if ctx.depth == 0
            && lexed.cmds.len() == 1
            && lexed.subs.is_empty()
            && lexed.texts.is_empty()
            && lexed.arith.is_empty()
            && lexed.evals.is_empty()
            && lexed.substrings.is_empty()
            && lexed.writes.is_empty()
            && lexed.opaque.is_none()
        {
            self.top_single = Some(lexed.cmds[0].span);
        }
        for a in &lexed.arith {
            if let Some(name) = arith_name(a) {
                self.findings.push(Finding::deny(
                    "shell",
                    vec![a.clone()],
                    format!(
                        "arithmetic on a variable (`{name}` in `{a}`) evaluates the variable's \
                         value, and an array subscript in that value runs commands the guard \
                         cannot read"
                    ),
                ));
            }
        }
        for e in &lexed.substrings {
            self.findings.push(Finding::deny(
                "shell",
                vec![e.clone()],
                format!(
                    "a substring's offset and length (`{e}`) are arithmetic: a variable named \
                     there is evaluated, and an array subscript in its value runs commands the \
                     guard cannot read; only literal numbers pass"
                ),
            ));
        }
        for e in &lexed.evals {
            self.findings.push(Finding::deny(
                "shell",
                vec![e.clone()],
                format!(
                    "`{e}` expands a value as a name or a prompt, which can run commands the \
                     guard cannot read"
                ),
            ));
        }
        for w in &lexed.writes {
            if let Some(why) = kernel_write_target(w, true) {
                self.findings.push(Finding::deny(
                    "shell",
                    vec![w.clone()],
                    format!("a redirection {why}: a kernel control file can signal or kill tmux"),
                ));
            }
            if !w.starts_with("/dev/") && !w.chars().all(|c| c.is_ascii_digit()) {
                self.written.push(w.clone());
            }
            if !matches!(w.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr")
                && !w
                    .trim_start_matches('&')
                    .chars()
                    .all(|c| c.is_ascii_digit())
            {
                self.not_a_filter
                    .get_or_insert_with(|| format!("a redirection to `{w}`"));
            }
        }
        // The `seq` of the command before, whose output a pipe carries.
        let mut prev = 0;
        for (k, s) in lexed.cmds.iter().enumerate() {
            let text = match s.input {
                Input::Text(i) => lexed.texts.get(i).map(String::as_str),
                _ => None,
            };
            // `(...) > f`: what a compound command prints cannot be read.
            for (_, w) in lexed.orphan_writes.iter().filter(|(at, _)| *at == k) {
                if !discarded(w) {
                    self.note_unreadable(format!("writes `{w}` from a compound command"));
                }
            }
            self.seq += 1;
            let here = self.seq;
            let mut c = ctx;
            if ctx.depth == 0 {
                c.span = Some(s.span);
            }
            // The thirty-fifth round: a here-string or here-document that the outer shell
            // expands (`sh <<< ": $(...)"`) is text only known at run time: judged as a pipe
            // (a shell or interpreter reading it is denied), not as the code it looks like.
            let expanded = matches!(s.input, Input::Text(t) if lexed.expanded.contains(&t));
            if expanded {
                self.simple(&s.words, &Input::Pipe, None, c);
            } else {
                self.simple(&s.words, &s.input, text, c);
            }
            let origin = (matches!(s.input, Input::Pipe) && k > 0).then_some(prev);
            self.note_output(&s.words, &s.input, text, &s.writes, here, origin);
            prev = here;
        }
        for (_, w) in lexed
            .orphan_writes
            .iter()
            .filter(|(at, _)| *at >= lexed.cmds.len())
        {
            if !discarded(w) {
                self.note_unreadable(format!("writes `{w}` from a compound command"));
            }
        }
        for sub in &lexed.subs {
            self.line(sub, ctx.inner("a command substitution"));
        }
    }

    /// Rule 4: a program or builtin that runs code given to it in a form the guard cannot
    /// read (a string it evaluates later, a config value, a variable's value, a file written
    /// in the same line). `Some(reason)` denies. Also notes writes and files run.
    fn code_runner(&mut self, base: &str, words: &[Word]) -> Option<String> {
        let rest = &words[1..];
        let has = |f: &str| rest.iter().any(|w| w.text == f);
        let starts = |f: &str| rest.iter().any(|w| w.text.starts_with(f));
        let unread = |what: &str| Some(format!("{what}: it runs code the guard cannot read"));
        // Files written or decoded; files run.
        match base {
            "tee" | "cp" | "mv" | "ln" | "install" | "dd" | "curl" | "wget" | "patch" | "rsync"
            | "scp" | "truncate" | "sed" | "perl" | "uniq" | "sort" | "shuf" | "iconv"
            | "split" | "csplit" | "objcopy" | "strip" | "sdiff" => {
                if base != "tee" && copies_unread(base, rest) {
                    self.note_unreadable(format!("writes files with `{base}`"));
                }
                for (t, runtime) in write_operands(base, rest) {
                    if let Some(why) = kernel_write_target(&t, runtime) {
                        self.findings.push(Finding::deny(
                            base,
                            vec![t.clone()],
                            format!(
                                "`{base}` {why}: a kernel control file can signal or kill tmux"
                            ),
                        ));
                    }
                }
                for w in rest {
                    let t = w.text.as_str();
                    let t = t
                        .strip_prefix("of=")
                        .or_else(|| t.strip_prefix("--output="))
                        .unwrap_or(t);
                    if !t.starts_with('-') {
                        self.written.push(t.to_string());
                    }
                }
            }
            "cc" | "gcc" | "g++" | "c++" | "clang" | "clang++" | "tcc" | "rustc" | "go"
                if rest.iter().any(|w| w.text == "-") =>
            {
                self.note_decoder(format!(
                    "compiles code from stdin with `{base}`, which can write any file"
                ));
            }
            "awk" | "gawk" | "mawk" | "nawk" if rest.iter().any(|w| w.text.contains('>')) => {
                self.note_decoder(format!("runs `{base}` code that writes files"));
            }
            "find"
                if rest.iter().any(|w| {
                    matches!(
                        w.text.as_str(),
                        "-fprint" | "-fprintf" | "-fprint0" | "-fls"
                    )
                }) =>
            {
                self.note_decoder("runs `find -fprintf`, which can write any file".into());
            }
            "git" if copies_unread(base, rest) => {
                self.note_unreadable("writes files with `git apply` or `--output`".into());
            }
            "yq" if copies_unread(base, rest) => {
                self.note_unreadable("writes a file in place with `yq -i`".into());
            }
            "base64" | "base32" | "basenc" | "xxd" | "openssl" | "uudecode" | "gunzip" | "zcat"
            | "unzip" | "tar" | "gzip" | "bzip2" | "bunzip2" | "xz" | "unxz" | "zstd" | "cpio"
            | "rev" => {
                self.note_decoder(format!("runs `{base}`, which can write any file"));
            }
            _ => {}
        }
        let first_arg = rest.iter().find(|w| !w.text.starts_with('-'));
        match base {
            "." | "source" => {
                if let Some(f) = rest.first() {
                    self.note_run_file(&f.text, format!("sources `{}`", f.text));
                }
            }
            "make" | "gmake" | "just" => {
                let files = option_values(words, 'f', "--file");
                if files.is_empty() {
                    for m in [
                        "Makefile",
                        "makefile",
                        "GNUmakefile",
                        "justfile",
                        "Justfile",
                    ] {
                        self.note_run_file(m, format!("runs `{base}`"));
                    }
                }
                for f in files {
                    self.note_run_file(f, format!("runs `{base} -f {f}`"));
                }
            }
            b if SHELLS.contains(&b)
                && !rest
                    .iter()
                    .any(|w| w.text.starts_with('-') && w.text.contains('c')) =>
            {
                if let Some(f) = first_arg {
                    self.note_run_file(&f.text, format!("runs `{base} {}`", f.text));
                }
            }
            b if is_interpreter(b)
                && !matches!(b, "sed" | "gsed" | "awk" | "gawk" | "mawk" | "nawk")
                && !rest
                    .iter()
                    .any(|w| w.text == "-m" || inline_code_flag(&w.text)) =>
            {
                if let Some(f) = first_arg {
                    self.note_run_file(&f.text, format!("runs `{base} {}`", f.text));
                }
            }
            _ => {}
        }
        if words[0].text.contains('/') {
            self.note_run_file(&words[0].text, format!("runs `{}`", words[0].text));
        }
        if rest
            .iter()
            .any(|w| w.text.contains(".git/hooks") || w.text.contains(".git/config"))
        {
            return Some(format!(
                "`{base}` touches .git/hooks or .git/config, where git finds code it runs"
            ));
        }
        // Builtins that evaluate a value.
        let subscript = rest.iter().any(|w| w.text.contains('['));
        match base {
            "trap"
                if rest
                    .iter()
                    .any(|w| !matches!(w.text.as_str(), "-l" | "-p" | "--")) =>
            {
                return unread("`trap` runs its string when a signal or exit comes");
            }
            "mapfile" | "readarray" if starts("-C") => {
                return unread("`mapfile -C` runs its callback string");
            }
            "printf" | "read" | "declare" | "typeset" | "local" | "export" | "readonly"
            | "test" | "[" | "[[" | "unset" | "getopts" | "wait" | "let" | "mapfile"
            | "readarray"
                if subscript && (has("-v") || !matches!(base, "[[" | "test" | "[")) =>
            {
                return Some(format!(
                    "`{base}` is given a name with an array subscript, which bash evaluates as \
                     arithmetic: it can run commands the guard cannot read"
                ));
            }
            _ if name_operand_denial(base, rest).is_some() => {
                return name_operand_denial(base, rest);
            }
            "let" => {
                if let Some(a) = rest.iter().find_map(|w| arith_name(&w.text)) {
                    return Some(format!(
                        "`let` on a variable (`{a}`) evaluates the variable's value, and an array \
                         subscript in that value runs commands the guard cannot read"
                    ));
                }
            }
            "declare" | "typeset" | "local" | "export" | "readonly"
                if rest
                    .iter()
                    .any(|w| w.text.starts_with('-') && w.text.contains('i')) =>
            {
                return unread("an integer variable (`-i`) evaluates every value assigned to it");
            }
            "[[" if rest.iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge" | "-v" | "-R"
                )
            }) && rest.iter().any(|w| {
                // `$#`, `$?`, `$$`, `$!` hold numbers, never code.
                let special = matches!(w.text.as_str(), "$#" | "$?" | "$$" | "$!");
                !special && (w.dynamic || arith_name(&w.text).is_some() && !w.text.starts_with('-'))
            }) =>
            {
                return unread("`[[ ... -eq ... ]]` evaluates its operands as arithmetic");
            }
            "hash" if starts("-p") => {
                return unread("`hash -p` makes a command name run another file");
            }
            "enable" if starts("-f") => return unread("`enable -f` loads a builtin from a file"),
            // History: `fc -s old=new` and `!-1:1!-1:2` build a command from earlier lines,
            // which the guard does not keep.
            "fc" => return unread("`fc` runs commands rebuilt from the shell's history"),
            "history"
                if rest.iter().any(|w| {
                    w.text.starts_with('-') && !matches!(w.text.as_str(), "-c" | "-d" | "-w")
                }) =>
            {
                return unread("`history` with these options adds to or expands the history");
            }
            "set" if turns_on_history(rest) => {
                return unread("`set -H`/`-o history`/`-o histexpand` turns on history expansion");
            }
            b if SHELLS.contains(&b) && turns_on_history(rest) => {
                return unread("a shell started with history expansion (`-H`, `-o history`)");
            }
            // An alias is text the shell reads again as code, before the words that follow
            // it (a value ending in `\` joins the next line): the guard does not expand it.
            "alias" if rest.iter().any(|w| w.text.contains('=') || w.dynamic) => {
                return unread("`alias` defines text the shell reads again as code");
            }
            "command_not_found_handle" => return unread("`command_not_found_handle`"),
            _ => {}
        }
        for w in rest {
            if matches!(
                base,
                "export" | "declare" | "typeset" | "local" | "readonly" | "env"
            ) && let Some(why) = code_var(&w.text)
            {
                return Some(why);
            }
        }
        if let Some(why) = exported_variable_denial(base, rest) {
            return Some(why);
        }
        // Programs that run a command or a program given as data.
        match base {
            "sed" | "gsed" => {
                let mut scripts: Vec<&str> = option_values(words, 'e', "--expression");
                if starts("-f") || starts("--file") {
                    return unread("`sed -f` reads its program from a file");
                }
                if scripts.is_empty() {
                    let mut j = 0;
                    while j < rest.len() {
                        let t = rest[j].text.as_str();
                        if t == "-l" {
                            j += 2;
                            continue;
                        }
                        if !t.starts_with('-') || t == "-" {
                            scripts.push(t);
                            break;
                        }
                        j += 1;
                    }
                }
                if let Some(sc) = scripts.iter().find(|sc| !sed_script_is_plain(sc)) {
                    return Some(format!(
                        "`sed` script `{sc}` runs a command (`e`) or writes a file (`w`); only \
                         plain edits pass the guard"
                    ));
                }
            }
            "ed" | "ex" | "red" | "vim" | "vi" | "nvim" | "emacs" | "gdb" | "lldb" | "gdbtui"
            | "gdb-multiarch" | "cgdb" | "cpan" => {
                return unread(&format!(
                    "`{base}` runs shell commands from its input (`!cmd`)"
                ));
            }
            "script" => return unread("`script` runs a command string"),
            "m4" => return unread("`m4` runs shell commands from its input (`syscmd`, `esyscmd`)"),
            "dc" if rest
                .iter()
                .any(|w| w.text.contains('!') || w.text.starts_with("-f")) =>
            {
                return unread("`dc` runs `!command`");
            }
            "sqlite3"
                if rest.iter().any(|w| {
                    w.text.contains(".shell") || w.text.contains(".system") || w.text == "-cmd"
                }) =>
            {
                return unread("`sqlite3 .shell` / `.system` runs a command");
            }
            "socat"
                if rest.iter().any(|w| {
                    let l = w.text.to_ascii_lowercase();
                    l.contains("exec:") || l.contains("system:")
                }) =>
            {
                return unread("`socat EXEC:` / `SYSTEM:` runs a command");
            }
            "npx" | "npm" | "pnpm" | "yarn"
                if rest
                    .iter()
                    .any(|w| w.text == "-c" || w.text.starts_with("--call")) =>
            {
                return unread(&format!("`{base} -c` runs a command string"));
            }
            "sort"
                if rest
                    .iter()
                    .any(|w| long_opt(&w.text, "--compress-program", 4)) =>
            {
                return unread("`sort --compress-program` runs a program");
            }
            // The thirty-fourth round: ripgrep's preprocessor runs a program on every file.
            "rg" if rest
                .iter()
                .any(|w| w.text.starts_with("--pre") && !w.text.starts_with("--pre-glob")) =>
            {
                return unread("`rg --pre` runs a program on each file it searches");
            }
            "make" | "gmake" | "just" if rest.iter().any(|w| arg_code(w).is_some()) => {
                return unread(&format!(
                    "`{base}` is given shell code (a variable its recipes may run)"
                ));
            }
            "split" if rest.iter().any(|w| long_opt(&w.text, "--filter", 3)) => {
                return unread("`split --filter` runs a command string through a shell");
            }
            "apt" | "apt-get" | "aptitude" | "apt-cache" | "apt-mark" | "apt-config" => {
                for f in option_values(words, 'c', "--config-file") {
                    self.note_run_file(f, format!("reads apt configuration from `{f}`"));
                }
                if let Some(kv) = option_values(words, 'o', "--option")
                    .into_iter()
                    .find(|kv| !apt_option_is_plain(kv))
                {
                    return unread(&format!(
                        "`{base} -o {kv}` sets configuration (a `Pre-Invoke`/`Post-Invoke` hook, \
                         `DPkg::Pre-Install-Pkgs`, a tool, a path, dpkg options) that may run a \
                         command"
                    ));
                }
            }
            "dpkg"
                if rest.iter().any(|w| {
                    let name = w.text.split('=').next().unwrap_or("");
                    matches!(name, "--pre-invoke" | "--post-invoke" | "--status-logger")
                }) =>
            {
                return unread(
                    "`dpkg --pre-invoke`/`--post-invoke`/`--status-logger` runs a command",
                );
            }
            "crontab" if !rest.iter().any(|w| matches!(w.text.as_str(), "-l" | "-r")) => {
                return unread("`crontab` installs commands that run later");
            }
            "man" if starts("-P") || starts("--pager") || starts("-H") || starts("--html") => {
                return unread("`man -P` runs a pager command");
            }
            "at" | "batch" => {
                return unread(&format!("`{base}` runs commands from its input later"));
            }
            "parallel" | "rush" => {
                return unread(&format!("`{base}` runs its arguments as command lines"));
            }
            _ if words[0].text.starts_with("/proc/") || words[0].text.starts_with("/dev/fd/") => {
                return unread(&format!(
                    "`{}` is a program reached through /proc or a descriptor, whatever it is",
                    words[0].text
                ));
            }
            "cargo"
                if rest.iter().any(|w| {
                    w.text.starts_with("--config") && !w.text.starts_with("--config=net.")
                }) =>
            {
                return unread("`cargo --config` may set a runner, linker or wrapper command");
            }
            "git"
                if rest.iter().any(|w| {
                    matches!(
                        w.text.as_str(),
                        "--exec" | "-x" | "--extcmd" | "--open-files-in-pager" | "-O" | "foreach"
                    ) || [
                        "--exec=",
                        "--extcmd=",
                        "--open-files-in-pager=",
                        "-O",
                        "--tool",
                        "--upload-pack",
                        "--receive-pack",
                        "ext::",
                        "filter-branch",
                        "--tree-filter",
                        "--index-filter",
                        "--msg-filter",
                        "--env-filter",
                    ]
                    .iter()
                    .any(|p| w.text.starts_with(p))
                        || w.text == "run" && rest.iter().any(|x| x.text == "bisect")
                }) =>
            {
                return unread(
                    "a git command that runs a command string (`rebase --exec`, \
                     `difftool -x`, `grep -O`, `submodule foreach`, `bisect run`, \
                     `filter-branch`, `--upload-pack`, `ext::`)",
                );
            }
            "git" if git_program_option(rest) => {
                return unread(
                    "a git option whose value git runs as a program (`send-email \
                     --sendmail-cmd`/`--to-cmd`/`--cc-cmd`/`--header-cmd`, `--smtp-server=/path`, \
                     `clone -u`, `--template` hooks, `daemon --access-hook`, `instaweb`)",
                );
            }
            "watch" => return unread("`watch` runs a command string through a shell"),
            "strace" | "ltrace"
                if rest
                    .iter()
                    .any(|w| w.text.starts_with("-o|") || w.text.starts_with('|')) =>
            {
                return unread(&format!("`{base} -o |...` pipes its output to a command"));
            }
            "flock" if starts("-c") || starts("--command") => {
                return unread("`flock -c` runs a command string through a shell");
            }
            "make" | "gmake"
                if option_values(words, 'f', "--file")
                    .iter()
                    .any(|f| *f == "-" || f.starts_with("/dev/"))
                    || starts("--eval")
                    || starts("-E") =>
            {
                return unread("`make` with a makefile from stdin or `--eval`");
            }
            "tar" | "bsdtar"
                if rest.iter().any(|w| {
                    let t = w.text.as_str();
                    // GNU tar takes any unambiguous prefix of a long option (`--to-c=`).
                    [
                        ("--checkpoint-action", 14),
                        ("--use-compress-program", 5),
                        ("--to-command", 6),
                        ("--info-script", 5),
                        ("--new-volume-script", 7),
                        ("--rsh-command", 5),
                        ("--rmt-command", 5),
                    ]
                    .iter()
                    .any(|(o, min)| long_opt(t, o, *min))
                        || t.starts_with("-I")
                        || t.starts_with("-F")
                        || (t.starts_with('-')
                            && !t.starts_with("--")
                            && (t.contains('I') || t.contains('F')))
                }) =>
            {
                return unread("`tar` with an option that runs a program");
            }
            "zip" if starts("-TT") || starts("--unzip-command") => {
                return unread("`zip -TT` runs its test command");
            }
            "ssh" | "scp" | "sftp" | "rsync" | "git" | "sshfs"
                if option_values(words, 'o', "--option").iter().any(|v| {
                    let l = v.to_ascii_lowercase();
                    [
                        "proxycommand",
                        "localcommand",
                        "knownhostscommand",
                        "permitlocalcommand",
                        "match",
                    ]
                    .iter()
                    .any(|k| l.contains(k))
                }) || (base != "git" && starts("-F")) =>
            {
                return unread(&format!(
                    "`{base}` with an option or config that runs a command"
                ));
            }
            "rsync" if starts("-e") || starts("--rsh") => {
                return unread("`rsync -e` runs its remote shell command");
            }
            "git" => {
                // The thirty-third round: a run-time value can be an option that runs a
                // program (`grep -O`, `rebase --exec`, `push --receive-pack`).
                if let Some(w) = rest.iter().find(|w| w.runtime)
                    && !args_are_values("git", rest)
                {
                    return unread(&format!(
                        "`git` is given `{}`, a value only known when the shell runs, which can \
                         be an option that runs a program; only the text of `-m`/`--message` \
                         and the like, or a word after `--`, in a subcommand that runs nothing",
                        w.text
                    ));
                }
                // Global options before the subcommand: `-c key=value` may name code.
                let mut j = 0;
                while j < rest.len() && rest[j].text.starts_with('-') {
                    let t = rest[j].text.as_str();
                    let value = match t {
                        "-c" | "-C" => rest.get(j + 1).map(|w| w.text.as_str()),
                        _ => None,
                    };
                    let config = if t == "-c" {
                        value
                    } else {
                        t.strip_prefix("-c")
                            .filter(|v| !v.is_empty() && !t.starts_with("--"))
                    };
                    if t.starts_with("--config-env") || t.starts_with("--exec-path") {
                        return unread(&format!("`git {t}` chooses code git runs"));
                    }
                    if let Some(kv) = config {
                        let key = kv.split('=').next().unwrap_or("");
                        if !git_key_is_plain(key) {
                            return unread(&format!(
                                "`git -c {kv}` sets configuration (an alias, core.*, a command, \
                                 an editor, a pager, a filter) that runs commands"
                            ));
                        }
                    }
                    j += if value.is_some() { 2 } else { 1 };
                }
                if rest.get(j).is_some_and(|w| w.text == "config") {
                    // `git config KEY VALUE` sets KEY (reading never runs anything); only the
                    // key decides, not a value that holds a dot (`user.email me@x.com`).
                    let args: Vec<&str> = rest[j + 1..]
                        .iter()
                        .map(|w| w.text.as_str())
                        .filter(|t| !t.starts_with('-'))
                        .collect();
                    let reads = rest[j + 1..].iter().any(|w| {
                        w.text.starts_with("--get") || matches!(w.text.as_str(), "-l" | "--list")
                    });
                    let key = args.first().copied().unwrap_or("");
                    let sets = !reads && (args.len() >= 2 || key.is_empty());
                    if sets && !git_key_is_plain(key) {
                        return unread("`git config` of a key whose value git may run");
                    }
                }
                if rest.get(j).is_some_and(|w| w.text == "clone") {
                    // `clone -c/--config KEY=VALUE` sets it in the new repository, used by the
                    // clone itself (`core.sshCommand`, `core.fsmonitor`, hooks): as `git -c`.
                    let args = &rest[j + 1..];
                    for (k, w) in args.iter().enumerate() {
                        let t = w.text.as_str();
                        if t == "--" {
                            break;
                        }
                        let next = || args.get(k + 1).map(|n| n.text.as_str()).unwrap_or("");
                        let kv = if t == "--config" {
                            Some(next())
                        } else if let Some(v) = t.strip_prefix("--config=") {
                            Some(v)
                        } else if t.starts_with('-') && !t.starts_with("--") {
                            // A short cluster: flags (`-q`, `-v`, `-n`, `-l`, `-s`) then `c`.
                            let body = &t[1..];
                            body.find('c')
                                .filter(|&p| body[..p].chars().all(|c| "lqvns".contains(c)))
                                .map(|p| match &body[p + 1..] {
                                    "" => next(),
                                    v => v,
                                })
                        } else {
                            None
                        };
                        if let Some(kv) = kv {
                            let key = kv.split('=').next().unwrap_or("");
                            if !git_key_is_plain(key) || w.dynamic {
                                return unread(&format!(
                                    "`git clone -c {kv}` sets configuration (an alias, core.*, a \
                                     command, an editor, a pager, a filter) that runs commands"
                                ));
                            }
                        }
                    }
                }
            }
            "less" | "more" | "most" | "man"
                if rest.iter().any(|w| {
                    w.text.starts_with('+') && (w.text.contains('!') || w.text.contains('|'))
                }) =>
            {
                return unread(&format!("`{base} +!cmd` runs a shell command"));
            }
            b if SHELLS.contains(&b)
                && rest.iter().any(|w| {
                    matches!(w.text.as_str(), "--rcfile" | "--init-file")
                        || w.text.starts_with("--rcfile=")
                        || w.text.starts_with("--init-file=")
                }) =>
            {
                return unread(&format!("`{b} --rcfile` runs a startup file"));
            }
            "awk" | "gawk" | "mawk" | "nawk"
                if rest.iter().any(|w| {
                    !w.text.starts_with('-') && (w.text.contains("getline") || w.text.contains('|'))
                }) =>
            {
                return unread("`awk` with a pipe (`| getline`, `print | cmd`) runs a command");
            }
            _ => {}
        }
        None
    }

    /// A decoder or inline code: it can write any file, with content the guard cannot read.
    fn note_decoder(&mut self, what: String) {
        self.note_unreadable(what.clone());
        self.decoder.get_or_insert(what);
    }

    /// A file written by the current command with content the guard cannot read.
    fn note_unreadable(&mut self, what: String) {
        self.unreadable.push((self.seq, what, None));
    }

    /// What one simple command (`here` is its `seq`) writes through its redirections or
    /// `tee`: literal text that reads as harmless code is readable (`echo hi > notes.txt`);
    /// anything else is not. `origin`: the command before it in a pipe.
    fn note_output(
        &mut self,
        words: &[Word],
        input: &Input,
        stdin: Option<&str>,
        writes: &[String],
        here: usize,
        origin: Option<usize>,
    ) {
        let argv: Vec<Word> = words
            .iter()
            .skip_while(|w| is_assignment(&w.text))
            .cloned()
            .collect();
        let prog = argv.first().map_or("", |w| basename(&w.text));
        // Only a filter reading the pipe saves what the command before it printed.
        let origin = origin.filter(|_| TEXT_FILTERS.contains(&prog) || prog == "tee");
        if prog == "tee" && copies_unread("tee", &argv[1..]) {
            self.unreadable
                .push((here, "writes files with `tee`".into(), origin));
        }
        let Some(w) = writes.iter().find(|w| !discarded(w)) else {
            return;
        };
        let unreadable = match literal_output(words, input, stdin) {
            Some(text) => {
                self.literal_written.push_str(&text);
                opaque_text(&text) || opaque_text(&self.literal_written)
            }
            None => true,
        };
        if unreadable {
            self.unreadable
                .push((here, format!("writes `{w}` from `{prog}`"), origin));
        }
    }

    fn note_run_file(&mut self, path: &str, what: String) {
        self.runs.push((path.to_string(), what));
    }

    fn note_env_change(&mut self, what: String) {
        if self.env_change.is_none() {
            self.env_change = Some(what);
        }
    }

    fn deny(&mut self, words: &[Word], why: String) {
        self.findings
            .push(Finding::deny("shell", texts(words), why));
    }

    fn simple(&mut self, words: &[Word], input: &Input, stdin: Option<&str>, mut ctx: Ctx) {
        let mut i = 0;
        // Leading assignments and keywords.
        while i < words.len() {
            let w = &words[i];
            if is_assignment(&w.text) {
                let name = w.text.split_once('=').map(|(n, _)| n).unwrap_or("");
                if i + 1 == words.len() || words[i + 1..].iter().all(|x| is_assignment(&x.text)) {
                    if sensitive_var(name.trim_end_matches('+')) {
                        self.note_env_change(format!("sets {name}"));
                    }
                } else {
                    ctx.env = Some("a variable assignment before the command");
                }
                i += 1;
            } else if KEYWORDS.contains(&w.text.as_str()) && !w.dynamic {
                i += 1;
            } else {
                break;
            }
        }
        for w in &words[..i] {
            if let Some(why) = code_var(&w.text) {
                self.deny(words, why);
            } else if is_assignment(&w.text)
                && let Some(why) = env_assignment_denial(w, i < words.len())
            {
                self.deny(words, why);
            }
        }
        let Some(argv0) = words.get(i) else { return };
        let rest = &words[i + 1..];
        if argv0.dynamic {
            self.deny(
                &words[i..],
                format!(
                    "the command name `{}` is only known when the shell runs; it could be tmux",
                    argv0.text
                ),
            );
            return;
        }
        let base = basename(&argv0.text);
        // Rule 6: what may load code from the current directory or a path.
        if !WRAPPERS.iter().any(|(w, ..)| *w == base) && !loads_no_code(base, rest, input) {
            self.loaders.push((self.seq, format!("runs `{base}`")));
        }
        // A filter told to write a file is no filter (`sort -o f`, `uniq in out`).
        let positional = rest
            .iter()
            .filter(|w| !w.text.starts_with('-') || w.text == "-")
            .count();
        let writes_a_file = match base {
            "sort" => rest
                .iter()
                .any(|w| w.text.starts_with("-o") || w.text.starts_with("--output")),
            "uniq" => positional >= 2,
            _ => false,
        };
        if base != "tmux" && (!TEXT_FILTERS.contains(&base) || writes_a_file) {
            self.not_a_filter.get_or_insert_with(|| format!("`{base}`"));
        }
        if base == "tmux" {
            self.runs_tmux = true;
            let real = argv0.text == "tmux" || self.tmux_bin.as_deref() == Some(&argv0.text);
            if !real {
                self.findings.push(Finding::deny(
                    "tmux",
                    texts(&words[i..]),
                    format!(
                        "`{}` is not the tmux this hook resolves ({}); only `tmux` or that \
                         absolute path is checked as tmux",
                        argv0.text,
                        self.tmux_bin.as_deref().unwrap_or("none found on PATH")
                    ),
                ));
                return;
            }
            self.tmux(&words[i..], ctx);
            // Its words are tmux's, not data: exempt from rule 2. (A denied command still
            // denies the line; only a read-only or form-(b) command can let it pass.)
            if let Some(sp) = ctx.span.filter(|_| i == 0)
                && plain_span(&self.chars[sp.0.min(self.chars.len())..sp.1.min(self.chars.len())])
            {
                self.exempt.push(sp);
            }
            return;
        }
        // Commands that change what later commands reach.
        match base {
            "cd" | "pushd" | "popd" | "unset" | "export" | "declare" | "typeset" | "local"
            | "readonly" | "set" | "source" | "." | "alias" | "unalias" | "hash" | "enable"
            | "shopt" | "function" | "trap" | "read" | "mapfile" | "readarray" | "getopts" => {
                self.note_env_change(format!("runs `{base}`"));
            }
            // `printf -v NAME`: an assignment.
            "printf" if rest.iter().any(|w| w.text.starts_with("-v")) => {
                self.note_env_change("runs `printf -v`".into());
            }
            _ => {}
        }
        if let Some(why) = self.code_runner(base, &words[i..]) {
            self.deny(&words[i..], why);
            return;
        }
        if let Some(why) = unix_socket_client(base, rest) {
            self.deny(&words[i..], why);
            return;
        }
        if let Some(why) = sql_client_runs_command(base, rest, input, stdin) {
            self.deny(&words[i..], why);
            return;
        }
        if let Some(why) = sqlite_runs_command(base, rest, input, stdin) {
            self.deny(&words[i..], why);
            return;
        }
        if mentions_tmux(base) {
            self.deny(
                &words[i..],
                format!("`{base}` drives tmux; only tmux itself is checked"),
            );
            return;
        }
        if RUNNERS.contains(&base) || is_loader(base) {
            self.runner(base, &words[i..], input, stdin, ctx);
            return;
        }
        if let Some(&(_, opts, env, taint)) = WRAPPERS.iter().find(|(w, ..)| *w == base) {
            self.wrapper(base, opts, env, taint, &words[i..], input, stdin, ctx);
            return;
        }
        if SHELLS.contains(&base) {
            self.shell(base, &words[i..], input, stdin, ctx);
            return;
        }
        match base {
            "eval" => {
                if rest.iter().any(|w| w.dynamic) {
                    self.deny(
                        &words[i..],
                        "`eval` of a value only known when the shell runs".into(),
                    );
                }
                let joined = texts(rest).join(" ");
                self.line(&joined, ctx.inner("eval"));
                return;
            }
            "source" | "." => {
                if rest.first().is_some_and(|w| w.dynamic) {
                    self.deny(
                        &words[i..],
                        "a script whose name is only known when the shell runs".into(),
                    );
                }
                if rest.is_empty() || rest[0].text == "-" || fd_path(&rest[0].text).is_some() {
                    self.deny(
                        &words[i..],
                        "`source` of commands from stdin or a file descriptor (`/dev/stdin`, \
                         `/dev/fd/N`, `/proc/*/fd/N`), which the guard cannot see"
                            .into(),
                    );
                }
                return;
            }
            "busybox" | "toybox" if !rest.is_empty() => {
                self.simple(rest, input, stdin, ctx.inner("busybox"));
                return;
            }
            "start-stop-daemon" if start_stop_daemon_stops(rest) => {
                self.deny(
                    &words[i..],
                    "`start-stop-daemon --stop` signals the processes it selects by user, \
                     parent, pid file, name or executable, which may be the tmux server"
                        .into(),
                );
                return;
            }
            "fuser" if fuser_kills(rest) => {
                self.deny(
                    &words[i..],
                    "`fuser -k` signals every process using a file, which may be the tmux server"
                        .into(),
                );
                return;
            }
            _ if manager_signal_denial(base, rest).is_some() => {
                let why = manager_signal_denial(base, rest).unwrap_or_default();
                self.deny(&words[i..], why);
                return;
            }
            "start-stop-daemon" => {
                // `--startas PROG` (else `--exec PROG`) runs PROG with the words after `--`.
                let all = &words[i..];
                let prog = option_values(all, 'a', "--startas")
                    .last()
                    .copied()
                    .or_else(|| option_values(all, 'x', "--exec").last().copied());
                if let Some(p) = prog {
                    let mut argv = vec![Word {
                        text: p.to_string(),
                        dynamic: all[1..].iter().any(|w| w.dynamic && w.text.contains(p)),
                        ..Word::default()
                    }];
                    if let Some(k) = all.iter().position(|w| w.text == "--") {
                        argv.extend(all[k + 1..].iter().cloned());
                    }
                    self.simple(&argv, &Input::Inherit, None, ctx.inner("start-stop-daemon"));
                }
            }
            "killall5" => {
                self.deny(
                    &words[i..],
                    "`killall5` signals every process (the tmux server among them)".into(),
                );
                return;
            }
            "kill" if kill_denial(rest).is_some() => {
                let why = kill_denial(rest).unwrap_or_default();
                self.deny(&words[i..], why);
                return;
            }
            "pkill" | "killall" if selects_beyond_names(base, rest) => {
                self.deny(
                    &words[i..],
                    format!(
                        "`{base}` selects processes by parent, user, group, terminal, session, \
                         pid file or an inverted match, which may select the tmux server"
                    ),
                );
                return;
            }
            "skill" | "snice" | "slay" => {
                self.deny(
                    &words[i..],
                    format!("`{base}` signals processes by user, terminal or command (the tmux server among them)"),
                );
                return;
            }
            "pkill" | "killall" if signal_pattern_may_reach_tmux(base, rest) => {
                self.deny(
                    &words[i..],
                    format!(
                        "`{base}` may signal a tmux server: a pattern that may match its name \
                         (`tmux: server`), or a process group or session"
                    ),
                );
                return;
            }
            "kill" | "pkill" | "killall" => {
                if words.iter().any(|w| mentions_tmux(&w.text)) {
                    self.deny(
                        &words[i..],
                        format!("`{base}` may signal a tmux server or its panes"),
                    );
                }
                return;
            }
            _ => {}
        }
        if is_interpreter(base) {
            let args: Vec<&Word> = rest.iter().filter(|w| !w.text.starts_with('-')).collect();
            let inline = rest.iter().any(|w| inline_code_flag(&w.text));
            if inline {
                // Its code can write a file as well as `tee` can (rule 4).
                self.note_decoder(format!("runs `{base}` code, which can write any file"));
            }
            // sed and awk programs cannot reach a name built at run time (their ways to run a
            // command are checked on their own).
            let stem = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
            let opaque = |t: &str| {
                suspicious_code(t)
                    || (stem == "perl" && perl_symbolic_call(t))
                    || (stem == "perl" && perl_runtime_open(&t.to_ascii_lowercase()))
                    || (matches!(stem, "ruby" | "irb") && ruby_reflective_call(t))
                    || (!matches!(base, "sed" | "gsed" | "awk" | "gawk" | "mawk" | "nawk")
                        && dynamic_code(&t.to_ascii_lowercase()))
                    || (matches!(base, "awk" | "gawk") && gawk_indirect(t))
                    || (!matches!(base, "sed" | "gsed" | "awk" | "gawk" | "mawk" | "nawk")
                        && self_loading_code(stem, t))
                    || (!matches!(base, "sed" | "gsed" | "awk" | "gawk" | "mawk" | "nawk")
                        && (code_from_string(t) || escaped_code(t)))
                    || (stem == "perl" && perl_unknown_use(t))
            };
            // `python3 -c "$(...)"`, `perl -e "$X"`: code only known when the shell runs;
            // a here-document holding a substitution likewise.
            let code_dynamic = rest
                .windows(2)
                .any(|p| inline_code_flag(&p[0].text) && p[1].dynamic)
                || runtime_program(stem, rest)
                || (matches!(input, Input::Text(_))
                    && stdin.is_some_and(|t| t.contains("$(") || t.contains('`')));
            // Its program read from stdin, a descriptor or a process substitution: stdin is
            // judged when it is a here-string or here-document (below), the rest is unseen.
            let from_fd = program_paths(base, rest)
                .into_iter()
                .find_map(|(p, dynamic)| {
                    if dynamic && (p.contains("<(") || p.contains(">(")) {
                        Some("reads its program from a process substitution".to_string())
                    } else if dynamic && matches!(input, Input::Pipe) {
                        Some("reads a program only known when the shell runs, given a pipe".into())
                    } else {
                        match fd_path(&p) {
                            Some(true) if !matches!(input, Input::Text(_)) => Some(format!(
                                "reads its program from stdin (`{p}`: {})",
                                match input {
                                    Input::Pipe => "a pipe",
                                    Input::File => "a file",
                                    _ => "the terminal",
                                }
                            )),
                            Some(false) => Some(format!(
                                "reads its program from `{p}`, a descriptor or device"
                            )),
                            _ => None,
                        }
                    }
                });
            // Tcl builds command names at run time (`set c ex; append c ec; $c ...`): its code
            // may only call commands known to be harmless, by literal name.
            let tcl = if matches!(stem, "tclsh" | "wish" | "expect") {
                let inline = rest
                    .windows(2)
                    .filter(|p| inline_code_flag(&p[0].text))
                    .map(|p| p[1].text.as_str());
                stdin.into_iter().chain(inline).find_map(tcl_code)
            } else {
                None
            };
            let module = unknown_module(stem, rest, inline || matches!(input, Input::Text(_)));
            let why = if code_dynamic {
                Some("runs code only known when the shell runs")
            } else if let Some(why) = &from_fd {
                Some(why.as_str())
            } else if let Some(why) = &tcl {
                Some(why.as_str())
            } else if let Some(why) = &module {
                Some(why.as_str())
            } else if rest.iter().any(|w| opaque(&w.text)) {
                Some(
                    "runs code that mentions tmux, a tmux command, a process call or a name built at run time",
                )
            } else if stdin.is_some_and(opaque) {
                Some(
                    "reads code that mentions tmux, a tmux command, a process call or a name built at run time",
                )
            } else if !inline
                && args.is_empty()
                && matches!(input, Input::Pipe)
                && !matches!(base, "make" | "gmake" | "just")
            {
                Some("reads its program from a pipe")
            } else if mentions_tmux(&self.line)
                && (args.is_empty() || matches!(input, Input::Text(_)))
                && !matches!(input, Input::File)
                && !matches!(base, "awk" | "gawk" | "mawk" | "nawk" | "sed" | "gsed")
            {
                Some("reads its program from stdin in a command line that mentions tmux")
            } else if mentions_tmux(&self.line)
                && args.iter().any(|w| !w.text.contains(char::is_whitespace))
                && !matches!(base, "awk" | "gawk" | "mawk" | "nawk" | "sed" | "gsed")
                && rest.iter().all(|w| !w.text.contains(char::is_whitespace))
            {
                Some("runs a script file in a command line that mentions tmux")
            } else {
                None
            };
            if let Some(why) = why {
                self.deny(
                    &words[i..],
                    format!("`{base}` {why}; the guard cannot see what it does"),
                );
            }
            return;
        }
        if SHELL_LIKE.contains(&base) {
            self.shell_like(base, &words[i..], input, stdin, ctx);
        }
        if is_inert(base, rest) {
            return;
        }
        if argv0.text.contains('/') && mentions_tmux(&self.line) {
            self.deny(
                &words[i..],
                format!(
                    "`{}` runs in a command line that mentions tmux; it may be tmux or a script \
                     that runs it",
                    argv0.text
                ),
            );
            return;
        }
        self.generic(base, &words[i..], input, stdin, ctx);
    }

    /// A program the guard does not know: it may run any of its arguments as a command, with
    /// its own input (`... | ld.so /usr/bin/python3` runs python3 on the pipe).
    fn generic(
        &mut self,
        base: &str,
        words: &[Word],
        input: &Input,
        stdin: Option<&str>,
        ctx: Ctx,
    ) {
        // Programs that run the files they find as commands: `find -exec {} ...`,
        // `fd -x {}`, `run-parts DIR`. Which program runs is only known at run time (any file
        // `-inum`, `-regex` or a directory selects may be tmux), so whatever verb follows,
        // the guard cannot judge it.
        if let Some(why) = runs_found_files(base, &words[1..]) {
            self.deny(words, why);
            return;
        }
        // `find -exec cp {} ./a \;`: the files it finds (tmux among them) copied under names
        // the line may then run or load.
        if base == "find"
            && let Some((_, exec)) = find_exec(&words[1..])
            && let Some(cmd) = exec.first()
            && matches!(
                basename(&cmd.text),
                "cp" | "mv" | "ln" | "install" | "rsync" | "dd" | "tee" | "cat" | "uniq" | "split"
            )
        {
            self.note_unreadable(format!("copies the files `find` finds with `{}`", cmd.text));
        }
        // A value only known at run time (`$(printf /usr/bin/t%sx mu)`, `$c`, `$((..))`): a
        // program the guard does not know may run it as a command, or pass it on as one's
        // verb (`prlimit $(...) $(...)`), so it is unproven.
        if !args_are_values(base, &words[1..])
            && let Some(w) = words[1..].iter().find(|w| w.runtime)
        {
            self.deny(
                words,
                format!(
                    "`{base}` is given `{}`, a value only known when the shell runs; the guard \
                     does not know `{base}`, which may run it as a command (tmux among them)",
                    w.text
                ),
            );
            return;
        }
        // An argument that is shell code (`--filter='x=$(...); $x ...'`): the program may
        // hand it to a shell.
        for w in &words[1..] {
            if let Some(why) = arg_code(w) {
                self.deny(
                    words,
                    format!(
                        "`{base}` is given `{}`, {why}: a program may run an argument as shell \
                         code, which the guard cannot read",
                        w.text
                    ),
                );
                return;
            }
        }
        // A word before this one that may name a program (a path, a glob, a run-time value).
        let mut path_before = false;
        for (j, w) in words.iter().enumerate().skip(1) {
            if j > 1 {
                let x = &words[j - 1];
                path_before |= x.dynamic || (x.text.contains('/') && !x.text.starts_with('-'));
            }
            let b = basename(&w.text);
            // `PROG /bin/sh -- -c '...'`: the `--` ends the outer program's options
            // (`start-stop-daemon`), not the shell's.
            let tail = &words[j + 1..];
            let tail = match tail {
                [dd, next, ..] if dd.text == "--" && next.text.starts_with('-') => &tail[1..],
                _ => tail,
            };
            if b == "tmux" || SHELLS.contains(&b) || b == "eval" || is_interpreter(b) {
                let mut run: Vec<Word> = vec![w.clone()];
                run.extend(tail.iter().cloned());
                self.simple(&run, input, stdin, ctx.inner("another program"));
                return;
            }
            // The thirty-fifth round: a glob (or brace) that may name a shell, an
            // interpreter, a runner or tmux (`ld.so /usr/bin/das?`, `x /usr/bin/python3*`):
            // the program may run whichever file it expands to, so it is judged as each
            // program it may name, with the words after it and the program's own input.
            if w.dynamic && !w.runtime && !w.text.starts_with('-') {
                let names = glob_program_names(&w.text);
                if names.contains(&"tmux") {
                    self.deny(
                        words,
                        format!("`{base}` is given `{}`, which may expand to tmux", w.text),
                    );
                    return;
                }
                if !names.is_empty() {
                    let before = self.findings.len();
                    for name in names {
                        let mut run = vec![Word {
                            text: name.to_string(),
                            ..Word::default()
                        }];
                        run.extend(tail.iter().cloned());
                        self.simple(&run, input, stdin, ctx.inner("a program named by a glob"));
                        if self.findings.len() > before {
                            break;
                        }
                    }
                    if self.findings.len() > before {
                        self.deny(
                            words,
                            format!(
                                "`{base}` is given `{}`, a glob that may name a shell, an \
                                 interpreter or a program runner, which it may run",
                                w.text
                            ),
                        );
                    }
                    return;
                }
            }
            if w.text.contains(char::is_whitespace) && mentions_tmux(&w.text) {
                // A command string (`watch '...'`, `ssh host '...'`, `script -c '...'`).
                self.line(&w.text, ctx.inner("a command string"));
                continue;
            }
            if names_tmux(&w.text) {
                self.deny(
                    words,
                    format!("`{base}` is given `{}`, which may run tmux", w.text),
                );
                return;
            }
            // The word as tmux may see it: whole, without the `;` that ends a tmux command
            // (`'kill-server;'`), or the value of an option (`--arg=kill-server`,
            // `-akill-server`) a program passes on.
            for form in tmux_word_forms(&w.text) {
                // Any tmux command but the read-only ones: `send`, `run`, `new`, `set` and
                // `detach -a` reach the leader as surely as a kill. Spelled with a `-` (a
                // unique prefix such as `kill-ser` included) for any program; by its alias
                // (`send`, `run`, `if`, `popup`) only for a program named by a path, since
                // `cargo run` and `docker run` are common.
                // So is a program given a path or a glob before the verb (`foo /opt/x/mux
                // send`, `runner t[[=m=]]ux run`): it may run that file, which may be tmux.
                let by_path = (words[0].text.contains('/')
                    && !WRAPPERS.iter().any(|(x, ..)| *x == base))
                    || path_before;
                if let Resolved::Command(cmd) = resolve(form)
                    && !READ_ONLY.iter().any(|(r, ..)| *r == cmd)
                    && ((form.contains('-') && form.len() >= 6)
                        || (by_path
                            && TMUX_COMMANDS
                                .iter()
                                .any(|(f, a)| *f == form || *a == Some(form))))
                {
                    self.deny(
                        words,
                        format!(
                            "`{base}` is given `{}` (tmux's {cmd}); `{base}` may be tmux under another name",
                            w.text
                        ),
                    );
                    return;
                }
                if TMUX_ALIASES.contains(&form) {
                    self.deny(
                        words,
                        format!("`{base}` is given `{}`, a tmux command alias", w.text),
                    );
                    return;
                }
            }
        }
    }

    /// A program runner of [`RUNNERS`]: its words as any unknown program's (a value only
    /// known at run time is unproven), each word with a space as a command line, and each of
    /// the first [`RUNNER_TRIES`] words that are no option as the command it runs.
    fn runner(&mut self, base: &str, words: &[Word], input: &Input, stdin: Option<&str>, ctx: Ctx) {
        if matches!(base, "sem" | "capsh") || ctx.depth >= 3 {
            self.deny(
                words,
                format!("`{base}` runs a command line the guard does not parse"),
            );
            return;
        }
        if SHELL_LIKE.contains(&base) {
            self.shell_like(base, words, input, stdin, ctx);
        }
        self.generic(base, words, input, stdin, ctx);
        for w in &words[1..] {
            if w.text.contains(char::is_whitespace) {
                self.line(&w.text, ctx.inner("a runner's command string"));
            }
        }
        let mut tried = 0;
        for j in 1..words.len() {
            if words[j].text.starts_with('-') && !words[j].dynamic {
                continue;
            }
            let tail = &words[j..];
            if self
                .runner_seen
                .insert((tail.as_ptr() as usize, tail.len()))
            {
                self.simple(tail, input, stdin, ctx.inner("a program runner"));
            }
            tried += 1;
            if tried == RUNNER_TRIES {
                break;
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn wrapper(
        &mut self,
        base: &str,
        opts: &str,
        env: bool,
        taint: bool,
        words: &[Word],
        input: &Input,
        stdin: Option<&str>,
        mut ctx: Ctx,
    ) {
        if base == "command"
            && words.get(1).is_some_and(|w| {
                w.text.starts_with('-') && (w.text.contains('v') || w.text.contains('V'))
            })
        {
            return; // `command -v tmux` only prints where tmux is.
        }
        let mut j = 1;
        let mut split: Option<String> = None;
        while j < words.len() {
            let w = &words[j].text;
            if base == "env" && is_assignment(w) {
                ctx.env = Some("env");
                j += 1;
                continue;
            }
            if w == "--" {
                j += 1;
                break;
            }
            if !w.starts_with('-') || w == "-" {
                break;
            }
            if let Some(v) = w.strip_prefix("--split-string=") {
                split = Some(v.to_string());
            } else if w.starts_with("--") {
                // --opt=value or a flag; `--signal KILL`-style values are not known: skip
                // nothing more.
            } else {
                let flags: Vec<char> = w.chars().skip(1).collect();
                for (k, f) in flags.iter().enumerate() {
                    if opts.contains(*f) {
                        let attached: String = flags[k + 1..].iter().collect();
                        let value = if attached.is_empty() {
                            j += 1;
                            words.get(j).map(|x| x.text.clone()).unwrap_or_default()
                        } else {
                            attached
                        };
                        if base == "env" && *f == 'S' {
                            split = Some(value.clone());
                        }
                        if base == "flock" && *f == 'c' {
                            self.line(&value, ctx.inner("flock -c"));
                        }
                        break;
                    }
                }
            }
            j += 1;
        }
        // A tmux hidden among the options (a misread option value) is still looked at.
        self.generic(
            base,
            &words[..j.min(words.len())],
            input,
            stdin,
            ctx.inner("a wrapper's options"),
        );
        if base == "timeout" && j < words.len() {
            j += 1; // the duration
        }
        if base == "flock" && j < words.len() {
            j += 1; // the lock file
        }
        if base == "taskset" || base == "chrt" {
            j += 1; // the mask or priority
        }
        if env {
            ctx.env = Some(match base {
                "env" => "env",
                "sudo" => "sudo",
                _ => "doas",
            });
        }
        if taint {
            ctx.tainted = true;
            // `xargs -I% bash -c %`, `xargs -a FILE sh`, `xargs ld.so ...`: code the guard
            // cannot read, put together at run time.
            if let Some(w) = words.get(j) {
                let b = basename(&w.text);
                // `xargs sed -i 's/a/b/'`: a plain sed script is fixed in the line.
                let plain_sed = matches!(b, "sed" | "gsed")
                    && words[j + 1..]
                        .iter()
                        .find(|x| !x.text.starts_with('-'))
                        .is_some_and(|x| !x.dynamic && sed_script_is_plain(&x.text))
                    && !words[j + 1..].iter().any(|x| {
                        x.text.starts_with("-e")
                            || x.text.starts_with("-f")
                            || x.text.starts_with("--e")
                            || x.text.starts_with("--f")
                    });
                // The thirty-third round: the words xargs reads become arguments, options
                // included (`... | xargs -L1 git` given `-c alias.x=!...`, `xargs find . -exec`,
                // `xargs fakeroot`): only programs that treat their arguments as data may be
                // run so (`kill` no more since the thirty-fifth round).
                // (The thirty-fourth round: options come that way too, `--pre=sh` to `rg`,
                // `--compress-program=sh` to `sort`: only programs none of whose options runs
                // a program.)
                let data_only = matches!(
                    b,
                    "rm" | "grep"
                        | "egrep"
                        | "fgrep"
                        | "wc"
                        | "cat"
                        | "head"
                        | "tail"
                        | "ls"
                        | "stat"
                        | "file"
                        | "du"
                        | "echo"
                        | "basename"
                        | "dirname"
                        | "realpath"
                        | "readlink"
                        | "touch"
                        | "mkdir"
                        | "rmdir"
                        | "md5sum"
                        | "sha1sum"
                        | "sha256sum"
                );
                // The thirty-fifth round: `pgrep ... | xargs kill` signals pids only known at
                // run time (`-1`, a process group).
                if matches!(b, "kill" | "pkill" | "killall" | "skill" | "snice" | "slay") {
                    self.deny(
                        words,
                        format!(
                            "`{base}` runs `{}` with process ids or options only known at run \
                             time (`-1` is every process, a negative id a process group)",
                            w.text
                        ),
                    );
                    return;
                }
                if SHELLS.contains(&b)
                    || !(data_only || plain_sed)
                    || (is_interpreter(b) && !plain_sed)
                    || SHELL_LIKE.contains(&b)
                    || WRAPPERS.iter().any(|(x, ..)| *x == b)
                    || matches!(b, "eval" | "source" | "." | "busybox")
                    || is_loader(b)
                    || w.dynamic
                {
                    self.deny(
                        words,
                        format!(
                            "`{base}` runs `{}` with arguments only known at run time: a shell, \
                             an interpreter or a program runner, whose code the guard cannot read",
                            w.text
                        ),
                    );
                    return;
                }
            }
        }
        let mut tail: Vec<Word> = Vec::new();
        if let Some(s) = split {
            // `env -S 'tmux kill-server'`: env splits the string into the command's words.
            for c in lex(&s).cmds {
                tail.extend(c.words);
            }
        }
        tail.extend(words.get(j..).unwrap_or(&[]).iter().cloned());
        if tail.is_empty() {
            // `sudo -s`, `doas -s`: a shell reading stdin.
            if SHELL_LIKE.contains(&base) {
                self.shell_like(base, words, input, stdin, ctx);
            }
            return;
        }
        ctx.span = None;
        self.simple(&tail, input, stdin, ctx);
    }

    /// A program that may run a shell on its stdin: a here-document is checked as commands;
    /// a pipe, in a line that mentions tmux, is denied.
    fn shell_like(
        &mut self,
        base: &str,
        words: &[Word],
        input: &Input,
        stdin: Option<&str>,
        ctx: Ctx,
    ) {
        // `su -c '...'`, `sg group -c '...'`, `runuser -c`, `ssh host '...'`, `docker exec c sh
        // -c '...'`: a word with a space is a command line for a shell.
        for w in &words[1..] {
            if w.dynamic {
                continue;
            }
            if w.text.contains(char::is_whitespace) || w.text.contains(';') {
                self.line(&w.text, ctx.inner("a command string"));
            }
        }
        match (input, stdin) {
            (Input::Text(_), Some(t)) => self.line(t, ctx.inner("a here-document")),
            (Input::Pipe, _) if mentions_tmux(&self.line) => self.deny(
                words,
                format!(
                    "`{base}` may run its stdin (a pipe) as commands in a line that mentions tmux"
                ),
            ),
            _ => {}
        }
    }

    fn shell(&mut self, base: &str, words: &[Word], input: &Input, stdin: Option<&str>, ctx: Ctx) {
        let mut j = 1;
        let mut has_c = false;
        let mut reads_stdin = false;
        while j < words.len() {
            let w = &words[j].text;
            if w == "--" || w == "-" {
                j += 1;
                break;
            }
            if !(w.starts_with('-') || w.starts_with('+')) {
                break;
            }
            if w.starts_with("--") {
                if matches!(w.as_str(), "--rcfile" | "--init-file") {
                    j += 1;
                }
            } else {
                if w.contains('c') {
                    has_c = true;
                }
                if w.contains('s') {
                    reads_stdin = true;
                }
                if w.ends_with('o') || w.ends_with('O') {
                    j += 1;
                }
            }
            j += 1;
        }
        if has_c {
            match words.get(j) {
                Some(script) if script.dynamic => self.deny(
                    words,
                    format!("`{base} -c` runs a script only known when the shell runs"),
                ),
                Some(script) => self.line(&script.text, ctx.inner("sh -c")),
                None => self.deny(words, format!("`{base} -c` without a script")),
            }
            return;
        }
        let mut script_file = words.get(j).filter(|_| !reads_stdin);
        // `bash /dev/stdin`, `sh /dev/fd/0`, `bash /proc/self/fd/0`: the script is stdin;
        // another descriptor (`exec 3<<<...; bash /dev/fd/3`) is code the guard cannot see.
        if let Some(fd) = script_file.and_then(|f| fd_path(&f.text)) {
            if !fd {
                self.deny(
                    words,
                    format!(
                        "`{base}` runs `{}`, code from a file descriptor the guard cannot see",
                        words[j].text
                    ),
                );
                return;
            }
            script_file = None;
        }
        match script_file {
            Some(f) if f.dynamic => self.deny(
                words,
                format!("`{base}` runs a script only known when the shell runs"),
            ),
            Some(f) if mentions_tmux(&f.text) => self.deny(
                words,
                format!("`{base}` runs `{}`, a script the guard cannot see", f.text),
            ),
            Some(f) if mentions_tmux(&self.line) => self.deny(
                words,
                format!(
                    "`{base}` runs `{}` in a command line that mentions tmux; the guard cannot \
                     see the script",
                    f.text
                ),
            ),
            Some(_) => {}
            None => match (input, stdin) {
                (Input::Text(_), Some(text)) => self.line(text, ctx.inner("a here-document")),
                _ => self.deny(
                    words,
                    format!(
                        "`{base}` reads its commands from stdin ({}), which the guard cannot see",
                        match input {
                            Input::Pipe => {
                                "a pipe, or a here-string or here-document holding a value only \
                                 known at run time"
                            }
                            Input::File => "a file",
                            _ => "the terminal",
                        }
                    ),
                ),
            },
        }
    }

    /// `tmux [global options] command [args] [; command ...]`.
    fn tmux(&mut self, words: &[Word], ctx: Ctx) {
        let argv = texts(words);
        let deny = |why: String| Finding::deny("tmux", argv.clone(), why);
        if ctx.tainted {
            self.findings.push(deny(
                "tmux run by xargs gets arguments only known at run time".into(),
            ));
            return;
        }
        if let Some(w) = words.iter().find(|w| w.dynamic) {
            self.findings.push(deny(format!(
                "`{}` is only known when the shell runs; tmux could receive any command",
                w.text
            )));
            return;
        }
        let args = &argv[1..];
        let (flags, first, unknown) = getopt(args, "2c:CDdf:hlL:NqS:T:uUvV");
        if let Some(f) = unknown {
            self.findings
                .push(deny(format!("unknown tmux option -{f}")));
            return;
        }
        let mut server = Server::Default;
        let mut has_l = false;
        let mut has_s = false;
        for (f, v) in &flags {
            match f {
                'L' => {
                    has_l = true;
                    server = Server::Name(v.clone());
                }
                'S' => {
                    has_s = true;
                    server = Server::Socket(v.into());
                }
                'C' => {
                    self.findings.push(Finding {
                        action: "tmux -C".into(),
                        destroying: true,
                        ..deny(
                            "`tmux -C` (control mode) reads tmux commands from stdin, which \
                             the guard cannot see"
                                .into(),
                        )
                    });
                    return;
                }
                'c' => {
                    self.findings.push(deny(
                        "`tmux -c` runs a shell command; it is not on the allowlist".into(),
                    ));
                    return;
                }
                'f' if v != "/dev/null" => {
                    self.findings.push(deny(format!(
                        "`tmux -f {v}` may load a config file, which can run any tmux command"
                    )));
                    return;
                }
                'V' | 'h' => return, // prints the version or usage
                _ => {}
            }
        }
        if has_l && has_s {
            self.findings.push(deny(
                "both -L and -S: tmux uses -S, so the server the command names is not the one \
                 it reaches"
                    .into(),
            ));
            return;
        }
        let rest = &args[first..];
        if rest.is_empty() {
            self.findings.push(deny(
                "`tmux` without a command starts a new session; not on the allowlist".into(),
            ));
            return;
        }
        // The command sequence: commands separated by a `;` argument, or by an argument
        // ending in an unescaped `;`.
        let mut cmds: Vec<Vec<String>> = vec![vec![]];
        for a in rest {
            if a == ";" {
                cmds.push(vec![]);
            } else if let Some(stripped) = a.strip_suffix(';')
                && !stripped.ends_with('\\')
            {
                if let Some(last) = cmds.last_mut() {
                    last.push(stripped.to_string());
                }
                cmds.push(vec![]);
            } else if let Some(last) = cmds.last_mut() {
                last.push(a.clone());
            }
        }
        for c in cmds.into_iter().filter(|c| !c.is_empty()) {
            let f = self.tmux_command(&c, &server, ctx);
            self.findings.push(f);
        }
    }

    fn tmux_command(&mut self, words: &[String], server: &Server, ctx: Ctx) -> Finding {
        let name = &words[0];
        let args = &words[1..];
        let mk = |action: String, destroying: bool, targets: Vec<String>, check: Check| Finding {
            action,
            destroying,
            server: server.clone(),
            targets,
            argv: words.to_vec(),
            check,
        };
        let cmd = match resolve(name) {
            Resolved::Command(c) => c,
            Resolved::Ambiguous(all) => {
                return mk(
                    format!("tmux {name}"),
                    all.iter()
                        .any(|c| c.starts_with("kill") || c.starts_with("respawn")),
                    vec![],
                    Check::Deny(format!(
                        "`{name}` is ambiguous in tmux ({}); not on the allowlist",
                        all.join(", ")
                    )),
                );
            }
            Resolved::Unknown => {
                return mk(
                    format!("tmux {name}"),
                    false,
                    vec![],
                    Check::Deny(format!("`{name}` is not a tmux command the guard knows")),
                );
            }
        };
        if let Some((_, spec, need)) = READ_ONLY.iter().find(|(r, ..)| *r == cmd) {
            let (flags, first, unknown) = getopt(args, spec);
            let targets = flags
                .iter()
                .filter(|(f, _)| *f == 't')
                .map(|(_, v)| v.clone())
                .collect();
            let why = if let Some(f) = unknown {
                Some(format!("{cmd} with -{f}, which the guard does not know"))
            } else if let Some(need) = need
                && !flags.iter().any(|(f, _)| f == need)
            {
                Some(format!(
                    "{cmd} without -{need} changes tmux state; only `{cmd} -{need}` is read-only"
                ))
            } else if let Some(a) = args.iter().find(|a| runs_commands(a)) {
                Some(format!(
                    "`{a}`: a tmux format with #(...) or #{{E:}}/#{{T:}} runs shell commands"
                ))
            } else if args.len() - first
                > usize::from(matches!(
                    cmd,
                    "show-options" | "show-window-options" | "display-message"
                ))
            {
                Some(format!("{cmd} with unexpected arguments"))
            } else {
                None
            };
            return mk(
                cmd.to_string(),
                false,
                targets,
                why.map_or(Check::ReadOnly, Check::Deny),
            );
        }
        let spec = match cmd {
            "kill-pane" => "af:t:",
            "respawn-pane" => "c:e:Ekt:",
            "kill-window" | "kill-session" => "aCt:",
            "unlink-window" => "kt:",
            "move-window" | "link-window" => "abdkrs:t:",
            "respawn-window" => "c:e:kt:",
            "new-window" => "abc:de:F:kn:PSt:",
            "split-window" | "new-pane" => "bc:de:fF:hIl:p:Pt:vZ",
            _ => "",
        };
        let (mut flags, first, unknown) = getopt(args, spec);
        if let Some(u) = unknown {
            flags.push((u, String::new()));
        }
        let targets: Vec<String> = flags
            .iter()
            .filter(|(f, _)| *f == 't')
            .map(|(_, v)| v.clone())
            .collect();
        let positional = args.len().saturating_sub(first);
        let is_destroying = destroying(cmd, &flags, positional);
        let k = flags.iter().any(|(f, _)| *f == 'k');
        let action = if (cmd.starts_with("respawn") || cmd.ends_with("-window")) && k {
            format!("{cmd} -k")
        } else {
            cmd.to_string()
        };
        let check = if cmd == "kill-pane" || (cmd == "respawn-pane" && k) {
            self.form_b(cmd, &flags, positional, &targets, server, ctx)
        } else {
            Check::Deny(format!(
                "{cmd} is not allowed: only read-only commands and a proven `kill-pane` / \
                 `respawn-pane -k` pass the guard{}",
                if matches!(cmd, "kill-window" | "kill-session") {
                    "; tmux resolves `-t %N` to that pane's window or session for kill-window \
                     and kill-session"
                } else {
                    ""
                }
            ))
        };
        mk(action, is_destroying, targets, check)
    }

    /// Whether a `kill-pane` / `respawn-pane -k` is exactly form (b).
    fn form_b(
        &mut self,
        cmd: &str,
        flags: &[(char, String)],
        positional: usize,
        targets: &[String],
        server: &Server,
        ctx: Ctx,
    ) -> Check {
        if let Some(where_) = ctx.nested {
            return Check::Deny(format!(
                "{cmd} inside {where_}: a kill is allowed only as a top-level tmux command"
            ));
        }
        if let Some(env) = ctx.env {
            return Check::Deny(format!(
                "{cmd} behind {env}, which changes tmux's environment"
            ));
        }
        if let Some((f, _)) = flags.iter().find(|(f, _)| *f != 't' && *f != 'k') {
            return Check::Deny(match f {
                'a' => format!("{cmd} -a kills every pane but the target"),
                'f' => format!("{cmd} -f kills every pane the filter matches"),
                _ => format!("{cmd} with -{f}: only -t %N is allowed"),
            });
        }
        if positional > 0 {
            return Check::Deny(format!(
                "{cmd} with a command or extra arguments: only -t %N is allowed"
            ));
        }
        if targets.is_empty() {
            return Check::Deny(format!(
                "{cmd} without -t acts on the current pane, which cannot be proven"
            ));
        }
        if let Some(t) = targets.iter().find(|t| !is_pane_id(t)) {
            return Check::Deny(format!(
                "-t {t} is not a pane id %N; tmux may resolve it to another pane"
            ));
        }
        match server {
            Server::Socket(p)
                if p.is_absolute()
                    && !p
                        .components()
                        .any(|c| matches!(c, std::path::Component::ParentDir)) =>
            {
                Check::NeedsProof
            }
            Server::Socket(p) => Check::Deny(format!(
                "-S {} is not an absolute path without `..`",
                p.display()
            )),
            _ => Check::Deny(format!(
                "{cmd} without an explicit absolute -S socket: the server it reaches depends on \
                 the environment"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn w(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn cmds(src: &str) -> Vec<Vec<String>> {
        lex(src).cmds.into_iter().map(|c| texts(&c.words)).collect()
    }

    #[test]
    fn splits_words_and_commands() {
        assert_eq!(
            cmds(r#"a 'b c' "d \"e\" f" g\ h; i && j || k | l & m"#),
            vec![
                w(&["a", "b c", "d \"e\" f", "g h"]),
                w(&["i"]),
                w(&["j"]),
                w(&["k"]),
                w(&["l"]),
                w(&["m"]),
            ]
        );
        assert_eq!(
            cmds("x 2>/dev/null >&2 <in y # c ; z"),
            vec![w(&["x", "y"])]
        );
        assert_eq!(cmds("echo $'a\\'b'"), vec![w(&["echo", "a'b"])]);
        let l = lex("cat <<'EOF' | sh\ntmux kill-server\nEOF\necho done");
        assert_eq!(l.texts, vec!["tmux kill-server\n".to_string()]);
        assert_eq!(l.cmds.len(), 3);
        assert_eq!(l.cmds[1].input, Input::Pipe);
        assert!(lex("echo $x").cmds[0].words[1].dynamic);
        assert!(!lex("echo '$x'").cmds[0].words[1].dynamic);
        assert!(lex("'unterminated").opaque.is_some());
    }

    #[test]
    fn arithmetic_shifts_are_not_here_documents() {
        for src in [
            "(( x = 1 << 2 ))\ntmux kill-server\n2",
            "for ((i=1<<2; i<0; i++)); do :; done\ntmux kill-server\n2",
            "echo $(( 1 << 2 ))\ntmux kill-server\n2",
            "[[ a << b ]]\ntmux kill-server\nb",
        ] {
            let l = lex(src);
            assert!(l.texts.is_empty(), "{src}: {:?}", l.texts);
            assert!(
                l.cmds
                    .iter()
                    .any(|c| texts(&c.words) == w(&["tmux", "kill-server"])),
                "{src}: {:?}",
                l.cmds
            );
        }
        // `( (cmd) )` is two subshells, not arithmetic.
        assert!(lex("( (tmux kill-server) )").arith.is_empty());
        assert_eq!(arith_name(" 1 << 2 "), None);
        assert_eq!(arith_name("0x1f + 16#ff"), None);
        assert_eq!(arith_name("x<<2").as_deref(), Some("x"));
    }

    #[test]
    fn normalizes_like_a_shell_reads() {
        for s in [
            "t\"\"mux",
            "t''mux",
            "t\\mux",
            "$'\\x74mux'",
            "$'\\164mux'",
            "\\u0074mux",
            "tm\\\nux",
            "TMUX",
            "t$()mux",
        ] {
            assert!(normalize(s).contains("tmux"), "{s:?} -> {:?}", normalize(s));
        }
        assert!(!normalize("t mux tmu x").contains("tmux"));
    }

    #[test]
    fn sed_scripts() {
        for plain in [
            "s/a/b/g",
            "10,40p",
            "/^#/d",
            "s|x|y|;s/a/b/2",
            "$!N;P;D",
            "1i\\\nhello",
        ] {
            assert!(sed_script_is_plain(plain), "{plain}");
        }
        for code in [
            "e",
            "s/x/y/e",
            "1e date",
            "w /tmp/x",
            "s/a/b/w /tmp/x",
            "W f",
        ] {
            assert!(!sed_script_is_plain(code), "{code}");
        }
    }

    #[test]
    fn resolves_like_tmux() {
        assert_eq!(resolve("killp"), Resolved::Command("kill-pane"));
        assert_eq!(resolve("kill-p"), Resolved::Command("kill-pane"));
        assert_eq!(resolve("kill-ser"), Resolved::Command("kill-server"));
        assert!(matches!(resolve("kill-se"), Resolved::Ambiguous(_)));
        assert!(matches!(resolve("kill-s"), Resolved::Ambiguous(_)));
        assert!(matches!(resolve("kill"), Resolved::Ambiguous(_)));
        assert_eq!(resolve("ls"), Resolved::Command("list-sessions"));
        assert_eq!(resolve("lsp"), Resolved::Command("list-panes"));
        assert_eq!(resolve("display"), Resolved::Command("display-message"));
        assert_eq!(resolve("respawnp"), Resolved::Command("respawn-pane"));
        assert_eq!(resolve("nope"), Resolved::Unknown);
    }

    fn checks(src: &str) -> Vec<(String, Check)> {
        analyze(src, None)
            .into_iter()
            .map(|f| (f.action, f.check))
            .collect()
    }

    #[test]
    fn form_b_and_read_only() {
        assert_eq!(
            checks("tmux -S /t/sock kill-pane -t %1"),
            vec![("kill-pane".to_string(), Check::NeedsProof)]
        );
        assert_eq!(
            checks("tmux -S /t/sock killp -t %1 \\; respawnp -k -t %2"),
            vec![
                ("kill-pane".to_string(), Check::NeedsProof),
                ("respawn-pane -k".to_string(), Check::NeedsProof)
            ]
        );
        assert_eq!(
            checks("tmux list-panes -a -F '#{pane_id}'"),
            vec![("list-panes".to_string(), Check::ReadOnly)]
        );
        // Rule 2: tmux named as data is a denial (once, for the whole line).
        let c = checks("echo \"t''mux kill-pane\"; grep -rn tmux src/ | head");
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(matches!(&c[0].1, Check::Deny(w) if w.contains("tmux appears inside data")));
        assert!(checks("echo hello; grep -rn pane src/ | head").is_empty());
    }

    fn denied(src: &str) -> bool {
        analyze(src, None)
            .iter()
            .any(|f| matches!(f.check, Check::Deny(_)))
    }

    #[test]
    fn arguments_that_are_shell_code() {
        // Round 9: the word a program may hand to a shell.
        for code in [
            "x=$(echo xumt|rev); $x -S /tmp/v.sock kill-serv",
            "--filter=x=$(echo xumt|rev); $x kill-serv",
            "APT::Update::Pre-Invoke::=x=$(echo xumt|rev); $x kill-serv",
            "alias.z=!$x kill-serv",
            "`echo xumt|rev` kill-serv",
            "${x} kill-serv",
            "timeout 5 $x kill-serv",
            "echo $(y=1; $y kill-serv)",
            "a=x; echo $((a))",
            "sh -c id",
            "!bash -c id",
            "python3 -c 'print(1)'",
            "eval id",
            "echo aWQ= | base64 -d | sh",
            "tmux kill-server",
        ] {
            assert!(code_in_word(code, true, 0).is_some(), "{code}");
        }
        for data in [
            "a|b",
            "fix; stuff",
            "s/a/b/;s/c/d/",
            "--nocapture",
            "Authorization: Bearer x",
            ".*\\.rs$",
            "sleep 0.1",
            "%H $x",
            "echo hi | sed 's/a/b/'",
        ] {
            assert!(code_in_word(data, true, 0).is_none(), "{data}");
        }
        // The outer shell's own expansions are values, not code: only command words count.
        assert!(code_in_word("$PWD:/app", false, 0).is_none());
        assert!(code_in_word("$(cat msg.md)", false, 0).is_none());
        assert!(code_in_word("python3 -c 'print($X)'", false, 0).is_some());
        assert_eq!(decode_escapes("\\x24x \\044y \\u0024z"), "$x $y $z");
        assert!(long_opt("--f=gzip", "--filter", 3) && long_opt("--filter", "--filter", 3));
        assert!(!long_opt("--fx", "--filter", 3) && !long_opt("-f", "--filter", 3));
        assert!(apt_option_is_plain("Acquire::Retries=3"));
        assert!(apt_option_is_plain("Dpkg::Options::=--force-confold"));
        for hook in [
            "APT::Update::Pre-Invoke::=x",
            "DPkg::Pre-Install-Pkgs::=x",
            "Dpkg::Options::=--pre-invoke=x",
            "Dir::Bin::dpkg=/tmp/x",
            "Acquire::http::Proxy-Auto-Detect=/tmp/x",
            "Unknown::Key=x",
        ] {
            assert!(!apt_option_is_plain(hook), "{hook}");
        }
        for line in [
            "start-stop-daemon --start --name zzq --startas /bin/sh -- -c 'x=$(echo xumt|rev); $x kill-serv'",
            "echo a | split -l 1 --filter='true'",
            "apt-get -o APT::Update::Pre-Invoke::=true update",
            "dpkg --post-invoke=true -i a.deb",
            "echo '* * * * * true' | crontab -",
            "foo --hook $'\\x24x kill-serv'",
            "foo --hook \"\\$x kill-serv $HOME\"",
        ] {
            assert!(denied(line), "{line}");
        }
        for line in [
            "git grep -n '$HOME'",
            "docker run -v \"$PWD:/app\" img make test",
            "start-stop-daemon -S -a /bin/bash -- -c 'echo hi'",
            "apt-get -o Dpkg::Options::=--force-confold install -y curl",
        ] {
            assert!(!denied(line), "{line}");
        }
    }

    #[test]
    fn globs_and_braces_that_spell_tmux_are_tmux() {
        let p = "/usr/bin/t?ux -S $O kill-\"$(echo server)\"";
        for attack in [
            format!("setarch x86_64 {p}"),
            format!("prlimit --nofile=1024 {p}"),
            "/lib64/ld-linux-x86-64.so.2 /usr/bin/t?ux -S $O -C < cmds".into(),
            "find /usr/bin -name 't?ux' -exec {} -S $O -C \\; < file".into(),
            "valgrind -q /usr/bin/t[m]ux -S $O kill-server".into(),
            "fakeroot /usr/bin/t{m,}ux -S $O kill-server".into(),
            "perf stat /usr/bin/t{l..n}ux -S $O kill-server".into(),
            "numactl -N0 tm* -S /tmp/t?ux-0/team-* kill-server".into(),
            "ltrace -f x -S /tmp/t?ux-1000/team-abc kill-server".into(),
            "xargs -I% ld.so /usr/bin/*mux -S % kill-server".into(),
        ] {
            assert!(denied(&attack), "allowed: {attack}");
        }
        for everyday in [
            "ls *.rs",
            "rm -rf target/*",
            "cat src/*.rs",
            "ls src/{lib,main}.rs",
            "grep -rn '[c]argo' src/",
            "echo $? ${x}",
            "cp -r {a,b}/ /tmp/",
            "find . -name '*.toml'",
        ] {
            assert!(!denied(everyday), "denied: {everyday}");
        }
        assert!(tmux_shaped("t?ux") && tmux_shaped("*mux*") && tmux_shaped("[s-u]mux"));
        assert!(tmux_shaped("t?ux-0") && tmux_shaped("t{m,}ux") && tmux_shaped("????"));
        assert!(!tmux_shaped("*") && !tmux_shaped("*.rs") && !tmux_shaped("t?x"));
        assert!(!tmux_shaped("x?y") && !tmux_shaped("{a,b}.rs"));
    }

    #[test]
    fn code_from_stdin_and_descriptors() {
        for attack in [
            "bash /dev/stdin <<< '$x kill-server'",
            "exec 3<<<'$x kill-server'; . /dev/fd/3",
            "exec 3<<<'ls'; bash /dev/fd/3",
            "cat f | bash /proc/self/fd/0",
            "sh /dev/fd/0",
            "sh /dev/stdin < file",
            "xargs -a cmds -I% bash -c %",
            "xargs -I% sh -c %",
            "xargs -a f -I% ld.so %",
            "xargs -0 python3",
        ] {
            assert!(denied(attack), "allowed: {attack}");
        }
        for everyday in [
            "bash /dev/stdin <<< 'echo hi'",
            "find . -name '*.rs' | xargs wc -l",
            "xargs -n1 echo < list",
        ] {
            assert!(!denied(everyday), "denied: {everyday}");
        }
    }

    #[test]
    fn sockets_in_code_and_unix_socket_clients() {
        for attack in [
            "python3 -c 'import socket'",
            "python3 -c 'import http.client as h; h.socket'",
            "perl -MIO::Socket::UNIX -e 1",
            "node -e 'require(\"net\")'",
            "ruby -rsocket -e 1",
            "curl --unix-socket /tmp/s http://x/",
            "timeout 5 nc -U /tmp/s",
            "busybox nc -U /tmp/s",
            "socat - /tmp/s",
            "socat - UNIX-CONNECT:/tmp/s",
        ] {
            assert!(denied(attack), "allowed: {attack}");
        }
        for everyday in [
            "python3 -c 'print(1)'",
            "curl -s https://example.com",
            "socat - TCP:localhost:80",
            "nc -z localhost 80",
        ] {
            assert!(!denied(everyday), "denied: {everyday}");
        }
    }

    #[test]
    fn tcl_calls_only_harmless_commands_by_literal_name() {
        for attack in [
            "set c ex; append c ec; $c ls",
            "[string cat ex ec] ls",
            "ex\\x65c ls",
            "\"exec\" ls",
            "{exec} ls",
            "rename exec e",
            "eval {puts hi}",
            "uplevel 1 {puts hi}",
            "subst {[exec ls]}",
            "namespace eval x {}",
            "interp create",
            "apply {{} {}}",
            "info commands",
            "load x.so",
            "package require x",
            "socket x 1",
            "open |ls",
            "puts [open |ls]",
            "expr $x",
            "if $x {}",
            "if {1} {$c ls}",
            "if {1} {} else {exec ls}",
            "for {exec ls} {0} {} {}",
            "proc p {} {exec ls}",
            "{*}$c",
            "lsort -command c {}",
            "regsub -com c a b",
            "puts \"[exec ls]",
            "puts {a",
            "puts {a}b",
        ] {
            assert!(tcl_code(attack).is_some(), "allowed: {attack}");
        }
        for everyday in [
            "puts hi",
            "set x 1; incr x; puts [expr {$x * 2}]",
            "# a comment [exec ls]\nputs hi",
            "proc sq {n} { return [expr {$n * $n}] }\nputs [sq 4]",
            "if {$x > 1} then { puts a } elseif {$x} { puts b } else { puts c }",
            "foreach {a b} {1 2 3 4} { puts \"$a=$b\" }",
            "puts [join [lsort -unique {c a b}] ,]",
            "set d [dict create a 1]; puts [dict get $d a]",
            "puts ${x}",
        ] {
            assert_eq!(tcl_code(everyday), None, "{everyday}");
        }
    }

    #[test]
    fn interpreter_programs_from_stdin_and_descriptors() {
        for attack in [
            "echo x | python3 /dev/stdin",
            "echo x | python3 /dev/fd/0",
            "echo x | python3 /dev//stdin",
            "echo x | python3 ../../../../dev/stdin",
            "echo x | python3 -W ignore /proc/self/fd/0",
            "python3 /dev/stdin < f",
            "python3 /dev/fd/3 3< f",
            "python3 /dev/tty",
            "echo x | perl /dev/stdin",
            "echo x | node -r /dev/stdin -e 1",
            "echo x | ruby -r/dev/stdin -e 1",
            "echo x | tclsh /dev/stdin",
            "echo x | wish /dev/fd/0",
            "echo x | awk -f /dev/stdin",
            "echo x | gawk --file=/dev/stdin",
            "echo x | bash /dev/./stdin",
            "bash /dev/tty",
            "python3 <(echo x)",
            "awk -f <(echo x) f",
            "echo x | python3 \"$p\"",
        ] {
            assert!(denied(attack), "allowed: {attack}");
        }
        for everyday in [
            "python3 /dev/stdin <<< 'print(1)'",
            "python3 - <<< 'print(1)'",
            "cat f | awk '{print $1}' /dev/stdin",
            "cat f | python3 -c 'import sys; print(sys.stdin.read())' /dev/stdin",
            "cat f | python3 -m json.tool /dev/stdin",
            "python3 x.py 2>/dev/null",
            "python3 -c 'print(1)' < /dev/null",
            "bash /dev/null",
        ] {
            assert!(!denied(everyday), "denied: {everyday}");
        }
    }

    #[test]
    fn python_standard_library_command_runners() {
        for attack in [
            "python3 -c 'import imaplib; imaplib.IMAP4_stream(\"id\")'",
            "python3 -c 'import pydoc; pydoc.pipepager(\"x\", \"id\")'",
            "python3 -c 'import pipes; pipes.Template()'",
            "python3 -c 'import os, profile as p; p.run(\"1\")'",
            "python3 -c 'from trace import Trace'",
            "python3 -c 'import webbrowser'",
            "python3 -c 'help(len)'",
            "python3 -c 'breakpoint()'",
            "BROWSER=id python3 -m webbrowser http://x",
            "PYTHONBREAKPOINT=os.system python3 -c 1",
        ] {
            assert!(denied(attack), "allowed: {attack}");
        }
        for everyday in [
            "python3 -c 'import json; print(1)'",
            "python3 -c 'print(\"profile trace pipes pager\")'",
            "python3 -c 'import traceback, cProfile_x'",
            "python3 -c 'p.add_argument(\"x\", help=\"y\")'",
        ] {
            assert!(!denied(everyday), "denied: {everyday}");
        }
    }

    #[test]
    fn sqlite3_dot_commands_that_run_commands() {
        for attack in [
            "sqlite3 :memory: \".read '|id'\"",
            "sqlite3 :memory: '.output |id'",
            "sqlite3 :memory: '.once -e'",
            "sqlite3 :memory: '.excel'",
            "sqlite3 :memory: '.sys id'",
            "sqlite3 -cmd '.output |id' db",
            "sqlite3 db \"select edit('', 'id')\"",
            "sqlite3 db <<< '.import |id t'",
            "echo .tables | sqlite3 db",
        ] {
            assert!(denied(attack), "allowed: {attack}");
        }
        for everyday in [
            "sqlite3 db.sqlite '.tables'",
            "sqlite3 db '.read schema.sql'",
            "sqlite3 db '.separator |' 'select 1;'",
            "sqlite3 db <<< 'select 1;'",
            "echo x | sqlite3 db 'select 1;'",
        ] {
            assert!(!denied(everyday), "denied: {everyday}");
        }
        assert_eq!(
            sqlite_dot_args("read '|a b' \"c\"d e"),
            ["read", "|a b", "cd", "e"]
        );
    }

    #[test]
    fn modules_loaded_by_option() {
        for attack in [
            "perl -MIPC::Cmd=run -e 'run(command=>1)'",
            "perl -wM-IPC::Cmd -e 1",
            "perl -e 1 -mIPC::Cmd",
            "perl -MList::Util=sum;run -e 1",
            "perl -d -e 1",
            "ruby -rrake -e 'sh 1'",
            "ruby -r rake -e 1",
            "node -r zx/globals -e 1",
            "node --import=zx/globals -p 1",
        ] {
            assert!(denied(attack), "allowed: {attack}");
        }
        for everyday in [
            "perl -MList::Util=sum -e 'print sum(1,2)'",
            "perl -Mstrict -lne 'print' f",
            "ruby -rjson -e 'puts 1'",
            "node -r ts-node/register -e 1",
            "node --import tsx main.ts",
        ] {
            assert!(!denied(everyday), "denied: {everyday}");
        }
    }

    #[test]
    fn programs_that_run_command_strings() {
        for attack in [
            "sqlite3 :memory: '.shell ls'",
            "git rebase --exec 'ls' HEAD~1",
            "git difftool -x ls HEAD",
            "git grep --open-files-in-pager=ls x",
            "git submodule foreach ls",
            "npx -c 'ls'",
            "m4 f.m4",
            "dc -e '!ls'",
            "socat - EXEC:ls",
            "sort --compress-program=ls f",
            "man -P ls ls",
            "cargo --config 'target.x.runner=\"ls\"' run",
            "at now < f",
            "batch < f",
        ] {
            assert!(denied(attack), "allowed: {attack}");
        }
        for everyday in [
            "git rebase -i HEAD~2",
            "git grep -n foo",
            "sort -u f",
            "man ls",
        ] {
            assert!(!denied(everyday), "denied: {everyday}");
        }
    }

    fn all_denied(lines: &[&str]) {
        let allowed: Vec<&&str> = lines.iter().filter(|l| !denied(l)).collect();
        assert!(allowed.is_empty(), "allowed: {allowed:#?}");
    }

    fn all_allowed(lines: &[&str]) {
        let denied: Vec<&&str> = lines.iter().filter(|l| denied(l)).collect();
        assert!(denied.is_empty(), "denied: {denied:#?}");
    }

    #[test]
    fn round_35a_glob_ranges_are_case_correct() {
        all_denied(&[
            "ls /usr/bin/t[Z-n]ux",
            "cp /usr/bin/t[Z-n]ux q",
            "ls /usr/bin/t[!Z-n]ux",
            "ls /usr/bin/t[^a-l]ux",
            "ls /usr/bin/[A-z]mux",
            "ls /usr/bin/t[M]ux",
            "ls /usr/bin/T?UX",
            "ls /usr/bin/t[_-n]ux",
            "cp /usr/bin/t{Z..n}ux q",
            "pkill 't\\wux'",
            "pkill 't[Z-n]ux'",
        ]);
        all_allowed(&[
            "ls src/[a-c]*.rs",
            "ls [A-C]*.md",
            "grep -rn '[c]argo' src/",
        ]);
        assert!(class_matches("Z-n", 'm') && class_matches("!Z-n", 't'));
        assert!(class_matches("A-Z", 'm') && class_matches("a-z", 'M'));
        assert!(!class_matches("a-c", 'm') && !class_matches("!a-z", 'm'));
        assert!(class_matches("!A-Z", 'm') && !class_matches("0-9", 'm'));
        let g = |p: &str, s: &str| {
            let (p, s): (Vec<char>, Vec<char>) = (p.chars().collect(), s.chars().collect());
            glob_matches(&p, &s)
        };
        assert!(g("t[l-n]ux", "tmux") && g("t[Z-n]ux", "tmux") && g("t[]m]ux", "tmux"));
        assert!(!g("t[a-c]ux", "tmux") && g("t[!a-c]ux", "tmux"));
    }

    #[test]
    fn round_35a_unknown_runners_and_globs_naming_shells() {
        all_denied(&[
            "echo 'uggc' | tr a-z n-za-m | ld.so /usr/bin/das?",
            "echo 'uggc' | tr a-z n-za-m | ld.so /usr/bin/python3.11",
            "echo 'uggc' | tr a-z n-za-m | ld.so /usr/bin/perl",
            "echo 'uggc' | tr a-z n-za-m | /lib64/ld-linux-x86-64.so.2 /usr/bin/das?",
            "echo 'uggc' | tr a-z n-za-m | lli",
            "echo 'uggc' | tr a-z n-za-m | choom -n 0 -- /usr/bin/das?",
            "echo 'uggc' | tr a-z n-za-m | luit -- /usr/bin/das?",
            "echo 'uggc' | tr a-z n-za-m | heaptrack /usr/bin/das?",
            "echo 'uggc' | tr a-z n-za-m | memusage /usr/bin/das?",
            "echo 'uggc' | tr a-z n-za-m | gdbtui",
            "echo 'uggc' | tr a-z n-za-m | jrunscript",
            "echo 'uggc' | tr a-z n-za-m | cpan",
            "echo 'uggc' | tr a-z n-za-m | java /dev/stdin",
            "echo 'uggc' | tr a-z n-za-m | myrunner /usr/bin/python3*",
            "echo 'uggc' | tr a-z n-za-m | myrunner /usr/bin/python3",
            "echo 'uggc' | myrunner /usr/bin/das?",
            "myrunner /usr/bin/pe?l -e 'system(1)'",
        ]);
        all_allowed(&[
            "ls /usr/bin/das?",
            "ls -l /usr/bin/python3*",
            "tar czf x.tgz *",
            "rustfmt src/*.rs",
            "myrunner /usr/bin/das? -c 'echo hi'",
        ]);
    }

    #[test]
    fn round_35a_runtime_values_in_text_a_shell_reads() {
        all_denied(&[
            "sh <<< \": $(echo '; gzhk xvyy-freire' | tr a-z n-za-m)\"",
            "sh <<EOF\n: $(echo '; gzhk xvyy-freire' | tr a-z n-za-m)\nEOF",
            "bash -s <<< \": $(echo x | tr a-z n-za-m)\"",
            "exec sh <<< \": $(echo x | tr a-z n-za-m)\"",
            "env sh <<< \": $(echo x | tr a-z n-za-m)\"",
            "nohup sh <<< \": $(echo x | tr a-z n-za-m)\"",
            "timeout 5 sh <<< \": $(echo x | tr a-z n-za-m)\"",
            "sh <<< \": `echo x`\"",
            "sh <<< \": $x\"",
            "sh <<< \": $((1+2))\"",
            "python3 <<EOF\nprint('$x')\nEOF",
        ]);
        all_allowed(&[
            "bash <<'EOF'\nfor f in *.rs; do echo \"$f\"; done\nEOF",
            "sh <<< 'echo $HOME'",
            "bash <<EOF\necho hi\nEOF",
            "cat <<EOF\nhello $USER\nEOF",
        ]);
    }

    #[test]
    fn round_35a_interpreter_programs_only_known_at_run_time() {
        all_denied(&[
            "awk \"BEGIN{ $(echo x) }\"",
            "awk \"$x\"",
            "awk -- \"$(echo x)\"",
            "awk -f \"$(echo x)\"",
            "awk -F: \"$x\" f",
            "awk -v a=1 \"$x\" f",
            "awk --source \"$x\"",
            "gawk \"BEGIN{ $(echo x) }\"",
            "mawk \"$x\"",
            "nawk \"$x\"",
            "busybox awk \"$x\"",
            "sed --expression=\"$x\" f",
            "php -R \"$x\"",
            "python3 -c\"$x\"",
            "node --eval=\"$x\"",
        ]);
        all_allowed(&[
            "awk '{print $1}' f",
            "awk -v n=\"$n\" '{print n}' f",
            "awk '{print $1}' \"$f\"",
            "sed -n '1,5p' \"$f\"",
        ]);
    }

    #[test]
    fn round_35a_kill_operands_and_pkill_selections() {
        all_denied(&[
            "kill -9 $((-1))",
            "kill -9 $[-1]",
            "kill -9 ' -1'",
            "kill -9 $(echo -1)",
            "kill -9 `echo -1`",
            "kill -9 $(printf -- -%d 1)",
            "kill $(lsof -t -i:3000)",
            "kill -9 tmuxserver",
            "pkill -P 1",
            "pkill -u someone",
            "pkill -U 1000",
            "killall -u root",
            "pkill --parent 1",
            "pkill --euid 1000",
            "pkill --uid 1000",
            "pkill -t pts/1",
            "pkill -v node",
            "pkill -F pidfile",
            "pgrep node | xargs kill",
            "skill -KILL -u someone",
        ]);
        all_allowed(&[
            "kill 1234",
            "kill -9 1234",
            "kill -s TERM 1234 5678",
            "kill -TERM -- 1234",
            "kill 0",
            "kill %1",
            "kill -l",
            "pkill -f 'node server.js'",
            "killall node",
        ]);
    }

    /// A command built at run time, as the attacker wrote it: `…` in a line becomes this.
    const BUILT: &str = "$(printf t%sx mu) $(printf kill-se%s rver)";

    fn built(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| l.replace('…', BUILT)).collect()
    }

    fn all_denied_built(lines: &[&str]) {
        let lines = built(lines);
        all_denied(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    }

    #[test]
    fn round_36a_substring_offsets_and_arithmetic_on_names() {
        all_denied_built(&[
            "x='a[…]'; s=abc; echo ${s:x}",
            "x='a[…]'; s=abc; echo ${s:0:x}",
            "x='a[…]'; s=abc; echo \"${s: -x:1}\"",
            "x='a[…]'; echo \"${@:x}\"",
            "x='a[…]'; echo \"${*:x}\"",
            "x='a[…]'; echo \"${1:x}\"",
            "x='a[…]'; s=abc; y=${s:x}",
            "x='a[…]'; s=abc; echo ${s:'x'}",
            "x='a[…]'; s=abc; echo ${s:1+x}",
            "x='a[…]'; a=(1 2); echo ${a[0]:x}",
            "x='a[…]'; a=(1 2); echo ${a[@]:x}",
            "x='a[…]'; s=abc; echo ${s:1:$x}",
            "x='a[…]'; echo $((x))",
            "x='a[…]'; ((x))",
            "x='a[…]'; let x",
            "x='a[…]'; [[ x -eq 1 ]]",
            "x='a[…]'; a=(1); echo ${a[x]}",
            "x='a[…]'; declare -i y=x",
            "x='a[…]'; for ((i=x; i<1; i++)); do :; done",
            // An unquoted here-document expands its body as a double-quoted string does.
            "x='a[…]'; s=abc; cat <<EOF\n${s:x}\nEOF",
            "x='a[…]'; cat <<EOF\n$((x))\nEOF",
            "x='a[…]'; cat <<EOF\n$[x]\nEOF",
            "x='a[…]'; a=(1); cat <<EOF\n${a[x]}\nEOF",
            "x='a[…]'; s=abc; cat <<-EOF\n\t${s:0:x}\n\tEOF",
        ]);
        all_allowed(&[
            "s=abc; echo ${s:1:2}",
            "s=abc; echo ${s:1}",
            "s=abc; echo \"${s: -2}\"",
            "s=abc; echo \"${s: -2:1}\"",
            "echo \"${@:2}\"",
            "echo \"${1:0:3}\"",
            "echo ${s:-default}",
            "echo \"${s:+alt}\"",
            "echo ${HOME:-/root}",
            "echo $((1+2))",
            "cat <<EOF\n${HOME:-x} $((1+2))\nEOF",
            "cat <<'EOF'\n${s:x} $((x))\nEOF",
        ]);
    }

    #[test]
    fn round_36a_builtins_given_a_name_only_known_at_run_time() {
        all_denied_built(&[
            "x='a[…]'; read -r \"$x\" <<< hi",
            "x='a[…]'; printf -v \"$x\" hi",
            "x='a[…]'; printf -v\"$x\" hi",
            "x='a[…]'; [ -v \"$x\" ]",
            "x='a[…]'; test -v \"$x\"",
            "x='a[…]'; [ ! -v \"$x\" ]",
            "x='a[…]'; test -R \"$x\"",
            "x='a[…]'; wait -n -p \"$x\"",
            "x='a[…]'; read -ra \"$x\" <<< hi",
            "x='a[…]'; read -r -a \"$x\" <<< hi",
            "x='a[…]'; read -d '' -r \"$x\" <<< hi",
            "x='a[…]'; mapfile \"$x\" < /dev/null",
            "x='a[…]'; mapfile -t \"$x\" < /dev/null",
            "x='a[…]'; readarray -t \"$x\" < /dev/null",
            "x='a[…]'; declare \"$x\"",
            "x='a[…]'; declare \"$x\"=1",
            "x='a[…]'; typeset \"$x\"",
            "x='a[…]'; local \"$x\"",
            "x='a[…]'; readonly \"$x\"",
            "x='a[…]'; unset \"$x\"",
            "x='a[…]'; unset -v \"$x\"",
            "x='a[…]'; export \"$x\"",
            "x='a[…]'; getopts ab \"$x\"",
            "x='a[…]'; [[ -v $x ]]",
            "x='a[…]'; [[ -v \"$x\" ]]",
            "n=$(printf P%s4 S); printf -v \"$n\" '%s' '$(…)'; set -x; :",
            "read -r \"$(echo x)\" <<< hi",
            "read -r `echo x` <<< hi",
            // A run-time word where an option may stand may be `-v NAME`.
            "x='-va[…]'; printf \"$x\" hi",
            "x='-pa[…]'; wait -n \"$x\"",
            "x='-a'; y='a[…]'; read \"$x\" \"$y\" <<< hi",
            "x='-v'; y='a[…]'; [ \"$x\" \"$y\" ]",
            "x='-v a[…]'; [ $x ]",
            "x='-v a[…]'; test $x",
            "x='-v'; [ \"$x\" 'a[…]' ]",
            "x='-n a[…]'; declare $x",
        ]);
        all_allowed(&[
            "read -r line < f",
            "read -r a b c <<< 'x y z'",
            "read -ra parts <<< 'x y z'",
            "read -p 'name? ' -r name",
            "read -t 5 -n 1 -r key",
            "while IFS= read -r line; do echo \"$line\"; done < f",
            "printf -v out '%s' x",
            "printf -vout '%s' \"$x\"",
            "printf '%s\\n' \"$x\"",
            "[ -v HOME ]",
            "test -v name",
            "[ -n \"$x\" ]",
            "test -f \"$f\"",
            "wait -n -p done_pid",
            "wait \"$!\"",
            "mapfile -t lines < f",
            "declare x=1",
            "local y=1",
            "export LC_ALL=C",
            "printf \"%s\\n\" \"$x\"",
            "printf \"x=%s\\n\" \"$x\"",
            "[ \"$a\" = \"$b\" ]",
            "[ -z \"$x\" ] && echo empty",
            "[ $# -gt 0 ]",
            "wait $!",
            "unset name",
            "getopts ab opt",
        ]);
    }

    #[test]
    fn round_36a_here_document_delimiters_joined_by_a_line_continuation() {
        let l = |s: &str| s.replace('…', BUILT);
        all_denied(&[
            &l("cat <<EOF\nhello\nEO\\\nF\n…\nEOF"),
            &l("cat <<EOF\nhello\nE\\\nOF\n…\nEOF"),
            &l("cat <<-EOF\nhello\n\tEO\\\nF\n…\nEOF"),
            &l("cat <<EOF\nhello\nEOF\\\n\n…\nEOF"),
            &l("cat <<EOF\nhello\\\nEOF\n…\nEOF"),
            &l("cat <<EOF\nhello\nEO\\\nF\n…\n"),
            &l("bash -c 'cat <<EOF\nhello\nEO\\\nF\n…\nEOF'"),
        ]);
        all_allowed(&[
            "cat <<EOF\na\nEOF",
            "cat <<-EOF\n\ta\n\tEOF",
            "cat <<EOF\na\\\\\nEOF",
            "cat <<EOF\nline one \\\ncontinued\nEOF",
            "cat <<'EOF'\nhello\nEO\\\nF\nEOF",
            "cat <<\\EOF\nhello\\\nEOF",
        ]);
        // Bash joins the lines of an unquoted body: the body is what the shell reads.
        let lexed = lex("cat <<EOF\nab\\\ncd\nEOF\n");
        assert_eq!(lexed.texts, vec!["abcd\n".to_string()]);
        let lexed = lex("cat <<'EOF'\nab\\\ncd\nEOF\n");
        assert_eq!(lexed.texts, vec!["ab\\\ncd\n".to_string()]);
    }

    #[test]
    fn round_36a_signals_by_huge_pids_files_and_session_managers() {
        all_denied(&[
            "/bin/kill -9 4294967295",
            "/usr/bin/kill -9 4294967295",
            "env kill -9 4294967295",
            "timeout 5 kill -9 4294967295",
            "nice kill -9 4294967295",
            "/bin/kill -9 -- 4294967295",
            "kill -9 4294967296",
            "kill -9 4294967295",
            "kill 4194305",
            "kill 01234",
            "kill 00",
            "kill +1234",
            "kill -s TERM -- 99999999999999999999",
            "fuser -k /dev/null",
            "fuser -k /usr/bin/*",
            "fuser -km /tmp",
            "fuser -k -KILL lib.so",
            "fuser -kv /dev/null",
            "fuser -mk /tmp",
            "fuser --kill /dev/null",
            "fuser -v -k /dev/null",
            "fuser \"$x\" /dev/null",
            "env fuser -k /dev/null",
            "loginctl kill-user \"$USER\"",
            "loginctl terminate-user 1000",
            "loginctl kill-session 1",
            "loginctl terminate-session 1",
            "loginctl kill-seat seat0",
            "loginctl terminate-seat seat0",
            "loginctl --no-ask-password terminate-user 1000",
            "systemctl --user kill app.service",
            "systemctl kill -s KILL app.service",
            "systemctl --user stop app.service",
            "systemctl --user restart app.service",
            "systemctl --user exit",
            "systemctl poweroff",
            "systemctl --user start exit.target",
            "systemctl -s KILL --user kill '*'",
            "busctl call org.freedesktop.login1 /org/freedesktop/login1 \
             org.freedesktop.login1.Manager KillUser uis 1000 all 9",
            "busctl --user call org.freedesktop.systemd1 /org/freedesktop/systemd1 \
             org.freedesktop.systemd1.Manager KillUnit ssi x.scope all 9",
            "gdbus call --system --dest org.freedesktop.login1 --object-path \
             /org/freedesktop/login1 --method org.freedesktop.login1.Manager.KillUser 1000 all 9",
            "dbus-send --system --dest=org.freedesktop.login1 /org/freedesktop/login1 \
             org.freedesktop.login1.Manager.TerminateUser uint32:1000",
            "start-stop-daemon --stop --user someone",
            "start-stop-daemon --stop --ppid 1",
            "start-stop-daemon --stop --pidfile /tmp/p",
            "start-stop-daemon --stop --name node",
            "start-stop-daemon --stop --exec /usr/bin/node",
            "start-stop-daemon -K -u someone",
            "start-stop-daemon -Ku someone",
            "start-stop-daemon --sto --name node",
        ]);
        all_allowed(&[
            "kill 1234",
            "kill -9 1234",
            "kill %1",
            "kill 0",
            "kill 4194304",
            "/bin/kill -9 1234",
            "env kill 1234",
            "timeout 5 kill 1234",
            "fuser /dev/null",
            "fuser -v /dev/null",
            "fuser -m /tmp",
            "fuser -n tcp 3000",
            "loginctl",
            "loginctl list-sessions",
            "loginctl show-user me",
            "systemctl --user status app.service",
            "systemctl status",
            "systemctl --user list-units --type service",
            "systemctl -t service list-units",
            "systemctl is-active app.service",
            "busctl list",
            "busctl --user tree org.freedesktop.systemd1",
            "busctl introspect org.freedesktop.login1 /org/freedesktop/login1",
            "gdbus introspect --system --dest org.freedesktop.login1 --object-path /",
        ]);
    }

    #[test]
    fn round_37a_carriage_returns_are_word_characters() {
        all_denied_built(&[
            "true\r# ; …",
            "true\r#;…",
            "echo a\r# x\n…",
            "echo \r# ; …",
            "true \r# ; …",
            "ls\r#|…",
        ]);
        let lexed = lex("a\rb c\r");
        assert_eq!(
            lexed.cmds[0]
                .words
                .iter()
                .map(|w| w.text.clone())
                .collect::<Vec<_>>(),
            vec!["a\rb".to_string(), "c\r".to_string()]
        );
        let lexed = lex("true\r# ; echo x");
        assert_eq!(lexed.cmds.len(), 2);
        all_allowed(&[
            "echo a # comment",
            "echo a\r",
            "echo a\rb",
            "echo a\r;echo b",
        ]);
    }

    #[test]
    fn round_37a_a_hash_right_after_an_array_assignment_is_no_comment() {
        all_denied_built(&[
            "a=(x)# ; …",
            "a=()# ; …",
            "a+=(x)# ; …",
            "declare -a a=(x)# ; …",
            "f() { local a=(x)# ; …\n}",
            "local a=(x)# ; …",
            "a=(x)#;…",
            "a=(x)#|…",
            "a[1]=(x)# ; …",
            "a=(x y)# …",
            "a=(x) b=(y)# ; …",
            "a=(x # )\n y)# ; …",
            "a=($(case x in x) echo;; esac))# ; …",
            "a=(x)$(true)# ; …",
        ]);
        all_allowed(&[
            "a=(x y) # note",
            "a=(x y); echo done",
            "(cd src) # note",
            "(true)# ; echo x",
            "a=(1 2 3)",
            "declare -a a=(x y)",
        ]);
    }

    #[test]
    fn round_37a_case_patterns_inside_command_substitutions() {
        all_denied_built(&[
            "echo $(case x in x) echo;; esac)# ; …",
            "echo $(case x in x) echo;; esac)#;…",
            "echo \"$(case x in x) echo;; esac)\"# ; …",
            "echo $(case x in x) echo $(case y in y) echo z;; esac);; esac)# ; …",
            "echo $(case x in\n x) echo;;\n y|z) echo;;\n esac)# ; …",
            "echo $(case x in x) echo;& y) echo;;& esac)# ; …",
            "cat <(case x in x) echo y;; esac)# ; …",
            "echo $(cat <<EOF\n)\nEOF\n)# ; …",
            "echo $(true # )\n)# ; …",
            "cat <<EOF\n$(case x in x) …;; esac)\nEOF",
            "echo ${x:-$(case x in x) echo;; esac)}# ; …",
            // Where the end cannot be found, the line is denied.
            "echo $(case x in x) echo )",
        ]);
        all_allowed(&[
            "echo $(case x in x) echo y;; esac)",
            "echo $(case x in (x) echo y;; esac)",
            "echo \"$(case x in a|b) echo y;; c) echo n;; esac)\"",
            "echo $(echo ')') $(echo \\)) # done",
            "git commit -m \"$(cat <<'EOF'\nfix: a (b) c\n\nmore)\nEOF\n)\"",
            "echo $(for case in a; do echo $case; done)",
            "echo $(echo case x in y)",
        ]);
    }

    #[test]
    fn round_37a_writes_to_kernel_control_files() {
        all_denied_built(&[
            "echo i > /proc/sysrq-trigger",
            "echo i >> /proc/sysrq-trigger",
            "echo i >| /proc/sysrq-trigger",
            "echo i 1<> /proc/sysrq-trigger",
            "echo i &> /proc/sysrq-trigger",
            "printf i | tee /proc/sysrq-trigger",
            "printf i | tee -a /proc/sysrq-trigger >/dev/null",
            "cp /tmp/i /proc/sysrq-trigger",
            "dd if=/tmp/i of=/proc/sysrq-trigger",
            "install /tmp/i /proc/sysrq-trigger",
            "mv /tmp/i /proc/sysrq-trigger",
            "sed -i s/x/y/ /proc/sysrq-trigger",
            "echo 1 > /sys/fs/cgroup/user.slice/cgroup.kill",
            "echo 1 > /sys/fs/cgroup/user.slice/cgroup.freeze",
            "echo FROZEN > /sys/fs/cgroup/freezer/x/freezer.state",
            "echo 1 > \"/sys/fs/cgroup$(cat /proc/self/cgroup | cut -d: -f3)/cgroup.kill\"",
            "echo 1 > \"/sys/fs/cgroup$(…)/cgroup.kill\"",
            "echo 1 > \"$d/cgroup.kill\"",
            "echo 1 > \"$(…)\"",
            "echo 1 > $(…)/x",
            "echo 1 > `…`",
            "echo 1 > ${d}/x",
            "echo 1 > /pr?c/sysrq-trigger",
            "echo 1 > /sy*/fs/cgroup/x/cgroup.kill",
            "echo 1 > ../../proc/sysrq-trigger",
            "echo 1 > cgroup.kill",
            "cd /proc; echo i > sysrq-trigger",
            "printf 'x' | dd of=/proc/1234/mem bs=1 seek=4096 conv=notrunc",
            "printf 'x' | dd of=/proc/self/mem",
            "printf i | tee \"$f\"",
            "ln -s /proc/sysrq-trigger t",
            "python3 -c \"open('/proc/sysrq-trigger','w').write('i')\"",
            "{ echo i; } > /proc/sysrq-trigger",
            "exec 3> /proc/sysrq-trigger",
            "echo i >& /proc/sysrq-trigger",
            "curl -sSLo /proc/sysrq-trigger http://x",
            "perl -pi -e s/x/i/ /proc/sysrq-trigger",
        ]);
        all_allowed(&[
            "echo hi > out.txt",
            "cat /proc/cpuinfo",
            "grep -c processor /proc/cpuinfo",
            "cat /sys/fs/cgroup/cgroup.controllers",
            "cargo test 2>&1 | tee log.txt",
            "echo hi > /tmp/out.txt",
            "echo hi > \"$HOME/out.txt\"",
            "ls /proc/self/fd > /dev/null",
            "cp a.txt b.txt",
        ]);
    }

    #[test]
    fn deep_nesting_is_denied_fast() {
        let t = std::time::Instant::now();
        assert!(denied(&"(".repeat(256 << 10)));
        assert!(denied(&"{".repeat(256 << 10)));
        assert!(t.elapsed() < std::time::Duration::from_secs(10));
    }

    #[test]
    fn round_38a_a_hash_in_the_regex_of_a_conditional_is_no_comment() {
        all_denied_built(&[
            "[[ x =~ (a|b)# ]] ; …",
            "[[ x =~ (a)#x ]] ; …",
            "[[ x =~ a(b)# ]] ; …",
            "[[ x =~ ( # ) ]] ; …",
            "[[ x =~ (a)# ]];…",
            "[[ x =~ (a)# ]] |…",
            "if [[ x =~ (a)# ]] ; then :; fi; …",
            "[[ y && x =~ (a)# ]] ; …",
            "[[ ( x =~ (a)# ) ]] ; …",
            "[[ x =~ ((a)|(b))# ]] ; …",
            "[[ x =~ (a b)# ]] ; …",
            "[[ x =~ (a;b)# ]] ; …",
            "[[ x =~ (a\nb)# ]] ; …",
            "[[ x == y # ]]\n]] ; …",
            "echo $( [[ x =~ (a)# ]] ; … )",
            "echo \"$( [[ x =~ (a|b)# ]] ; … )\"",
            "cat <( [[ x =~ ( # ) ]] ; … )",
        ]);
        let lexed = lex("[[ x =~ (a|b)# ]] ; echo y");
        assert_eq!(lexed.cmds.len(), 2);
        assert_eq!(lexed.cmds[0].words[3].text, "(a|b)#");
        all_allowed(&[
            "[[ $x =~ ^[a-z]+$ ]] && echo ok",
            "[[ x =~ (a|b) ]] && echo y",
            "[[ x =~ ( a ) ]] && echo y",
            "if [[ $v =~ ^v([0-9]+)\\.([0-9]+)$ ]]; then echo y; fi",
            "echo $( [[ x =~ (a|b) ]] && echo y )",
            "[[ -n x ]] # note",
        ]);
    }

    #[test]
    fn round_38a_here_documents_in_substitutions_end_at_the_delimiter_and_a_paren() {
        all_denied_built(&[
            "echo $(cat <<'EOF'\nx\nEOF)\n…\nEOF\n)",
            "echo $(cat <<EOF\nx\nEOF)\n…\nEOF\n)",
            "echo $(cat <<EOF\nx\nEOF )\n…\nEOF\n)",
            "echo $(cat <<EOF\nx\nEOF\t)\n…\nEOF\n)",
            "echo $(cat <<-EOF\nx\n\tEOF)\n…\nEOF\n)",
            "echo $(cat <<EOF\nx\nEOFz)\n…\nEOF\n)",
            "echo \"$(cat <<'EOF'\nx\nEOF)\n…\nEOF\n)\"",
            "cat <(cat <<'EOF'\nx\nEOF)\n…\nEOF\n)",
            "tee >(cat <<'EOF'\nx\nEOF)\n…\nEOF\n) < /dev/null",
        ]);
        all_allowed(&[
            "git commit -m \"$(cat <<'EOF'\nmsg\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF'\nfix: a (b) c\n\nmore)\nEOF\n)\"",
            "git commit -m \"$(cat <<-EOF\n\tmsg\n\tEOF\n)\"",
            "cat <<EOF\nx\nEOF)\nEOF",
        ]);
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,200}") {
            let _ = analyze(&s, None);
        }

        #[test]
        fn never_panics_on_shell_heavy_text(
            s in proptest::collection::vec(
                prop_oneof![
                    Just("'"), Just("\""), Just("\\"), Just("$("), Just(")"), Just("`"),
                    Just("$'"), Just(";"), Just("&&"), Just("|"), Just(" "), Just("\n"),
                    Just("tmux"), Just("kill-pane"), Just("-t"), Just("sh -c"), Just(">"),
                    Just("#"), Just("if-shell"), Just("\\;"), Just("-L"), Just("eval"),
                    Just("<<"), Just("<<<"), Just("${"), Just("}"), Just("<("),
                ],
                0..60,
            )
        ) {
            let _ = analyze(&s.concat(), None);
        }

        #[test]
        fn a_single_quoted_word_round_trips(s in "[^']{0,40}") {
            prop_assert_eq!(cmds(&format!("x '{s}'")), vec![vec!["x".to_string(), s]]);
        }
    }
}
