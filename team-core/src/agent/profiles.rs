//! The built-in agent profiles and the user's own (`<state root>/agents.toml`).
//!
//! A profile is data. The user file has one table per profile:
//!
//! ```toml
//! [agents.mybot]
//! programs = ["mybot"]            # program names that select it (init's detection)
//! display = "My bot"
//! prompt_arg = ["--prompt", "{prompt}"]  # first prompt as launch arguments; omit to type it
//! ready_cursor = ["> "]           # the cursor line shows one of these when ready
//! ready_screen = ["Type a task"]  # and the screen shows all of these
//! stable_ms = 800                 # the ready screen must stay unchanged this long
//! busy = ["Working"]              # the agent shows one of these while it works
//! queue_cursor = ["> "]           # its input line while it works (`send --queue`; omit: none)
//! settle_ms = 300                 # between the paste and Enter
//! verify_ms = 2000                # how long to wait for proof after each Enter
//! retries = 2                     # extra Enters when the draft stays in the input line
//! bracketed_paste = true
//! [[agents.mybot.blocking]]
//! name = "sign-in"
//! any = ["Please sign in"]
//! next_step = "run `mybot login` once, then `team-scale up` again"
//! ```
//!
//! A user profile with a built-in's name replaces it.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Agent profiles are data** (`agent/profiles.rs`, user profiles in `<state root>/agents.toml`),
//!   recorded by name in `settings.agent` at `init` (`--agent`, else detected from the program name
//!   of `--worker-cmd`; teams made before profiles detect at each `up`). A user profile with a
//!   built-in's name replaces it.
//!
//! - **The first prompt is a launch argument where the CLI takes one** (codex, claude, `gemini
//!   -i`), printed by the runtime script for a shell (the default worker command), and typed only
//!   for the others (aider, custom). The prompt is one single-quoted word after `"$@"` in `sh -c`,
//!   or `printf` data: no shell ever parses it.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};

/// A screen that blocks work: nothing is typed while it shows.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Blocker {
    /// A short name (`sign-in`, `trust`, `api-key`, `first-run`).
    pub name: String,
    /// The screen shows any of these texts.
    pub any: Vec<String>,
    /// What the user does next (`{worker}`, `{workspace}` are replaced).
    pub next_step: String,
}

/// How the first prompt reaches the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptMode {
    /// As launch arguments: nothing is typed.
    LaunchArg,
    /// Printed by the runtime script before the program starts (a shell): nothing is typed,
    /// and nothing executes it.
    Banner,
    /// Pasted into the input line once ready, then Enter on its own.
    Typed,
}

/// One agent profile.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    #[serde(skip)]
    pub name: String,
    #[serde(default)]
    pub display: Option<String>,
    #[serde(default)]
    pub programs: Vec<String>,
    /// Launch arguments carrying the first prompt (`{prompt}` is replaced).
    #[serde(default)]
    pub prompt_arg: Option<Vec<String>>,
    /// Print the first prompt before the program starts instead of typing it.
    #[serde(default)]
    pub banner: bool,
    #[serde(default)]
    pub ready_cursor: Vec<String>,
    #[serde(default)]
    pub ready_screen: Vec<String>,
    #[serde(default = "d_stable")]
    pub stable_ms: u64,
    #[serde(default)]
    pub busy: Vec<String>,
    /// The input line a working agent shows on the cursor line when it takes messages to
    /// queue (`send --queue`); empty: the agent takes none while it works.
    #[serde(default)]
    pub queue_cursor: Vec<String>,
    #[serde(default)]
    pub blocking: Vec<Blocker>,
    #[serde(default = "d_settle")]
    pub settle_ms: u64,
    #[serde(default = "d_verify")]
    pub verify_ms: u64,
    #[serde(default = "d_retries")]
    pub retries: u32,
    #[serde(default = "d_true")]
    pub bracketed_paste: bool,
}

fn d_stable() -> u64 {
    1000
}
fn d_settle() -> u64 {
    300
}
fn d_verify() -> u64 {
    2000
}
fn d_retries() -> u32 {
    2
}
fn d_true() -> bool {
    true
}

impl Profile {
    fn base(name: &str, display: &str, programs: &[&str]) -> Profile {
        Profile {
            name: name.into(),
            display: Some(display.into()),
            programs: programs.iter().map(|s| s.to_string()).collect(),
            prompt_arg: None,
            banner: false,
            ready_cursor: Vec::new(),
            ready_screen: Vec::new(),
            stable_ms: d_stable(),
            busy: Vec::new(),
            queue_cursor: Vec::new(),
            blocking: Vec::new(),
            settle_ms: d_settle(),
            verify_ms: d_verify(),
            retries: d_retries(),
            bracketed_paste: true,
        }
    }

    /// How the first prompt reaches this agent.
    pub fn mode(&self) -> PromptMode {
        if self.banner {
            PromptMode::Banner
        } else if self.prompt_arg.is_some() {
            PromptMode::LaunchArg
        } else {
            PromptMode::Typed
        }
    }

    /// The name shown to people.
    pub fn display(&self) -> &str {
        self.display.as_deref().unwrap_or(&self.name)
    }

    /// The launch arguments for `prompt` (empty unless [`PromptMode::LaunchArg`]).
    pub fn launch_args(&self, prompt: &str) -> Vec<String> {
        self.prompt_arg
            .iter()
            .flatten()
            .map(|a| a.replace("{prompt}", prompt))
            .collect()
    }

    fn check(&self) -> Result<()> {
        let bad = |m: String| Error::MalformedInput {
            what: "agents.toml".into(),
            msg: format!("agents.{}: {m}", self.name),
        };
        crate::paths::RoleName::new(&self.name).map_err(|e| bad(e.to_string()))?;
        if let Some(a) = &self.prompt_arg
            && !a.iter().any(|x| x.contains("{prompt}"))
        {
            return Err(bad("prompt_arg must contain {prompt}".into()));
        }
        if self.banner && self.prompt_arg.is_some() {
            return Err(bad("banner and prompt_arg exclude each other".into()));
        }
        if self.stable_ms > 60_000 || self.settle_ms > 60_000 || self.verify_ms > 60_000 {
            return Err(bad("a delay above 60000 ms".into()));
        }
        if self.retries > 10 {
            return Err(bad("retries above 10".into()));
        }
        for b in &self.blocking {
            if b.any.is_empty() || b.any.iter().any(|s| s.is_empty()) {
                return Err(bad(format!(
                    "blocking {:?}: `any` needs non-empty texts",
                    b.name
                )));
            }
        }
        for s in self.ready_cursor.iter().chain(&self.busy) {
            if s.is_empty() {
                return Err(bad("empty text in ready_cursor or busy".into()));
            }
        }
        for s in &self.queue_cursor {
            if s.trim().is_empty() {
                return Err(bad("queue_cursor needs non-blank texts".into()));
            }
        }
        Ok(())
    }
}

fn blocker(name: &str, any: &[&str], next_step: &str) -> Blocker {
    Blocker {
        name: name.into(),
        any: any.iter().map(|s| s.to_string()).collect(),
        next_step: next_step.into(),
    }
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The built-in profiles: `codex`, `claude`, `gemini`, `aider`, `shell`, and `custom` (any
/// other program: typed input, ready when its screen is stable).
pub fn builtins() -> Vec<Profile> {
    let mut codex = Profile::base("codex", "Codex", &["codex"]);
    codex.prompt_arg = Some(strs(&["{prompt}"]));
    codex.busy = strs(&["esc to interrupt", "Working ("]);
    // While it works its input line stays (`› Ask Codex to do anything`), and a message
    // entered there is queued.
    codex.queue_cursor = strs(&["›"]);
    codex.blocking = vec![
        blocker(
            "sign-in",
            &[
                "Sign in with ChatGPT",
                "Welcome to Codex",
                "Provide your own API key",
            ],
            "{worker} shows Codex's sign-in screen: run `codex login` once (or `codex login --with-api-key`), then `team-scale up` again",
        ),
        blocker(
            "trust",
            &[
                "Do you trust the files in this folder",
                "trust the contents of this directory",
                "Allow Codex to work in this folder",
            ],
            "{worker} shows Codex's trust question for {workspace}: run `codex` there once and answer it yourself (or set trust_level = \"trusted\" for it in ~/.codex/config.toml), then `team-scale up` again",
        ),
    ];
    let mut claude = Profile::base("claude", "Claude Code", &["claude"]);
    claude.prompt_arg = Some(strs(&["{prompt}"]));
    claude.busy = strs(&["esc to interrupt"]);
    claude.queue_cursor = strs(&["❯"]);
    claude.blocking = vec![
        blocker(
            "trust",
            &[
                "Yes, I trust this folder",
                "Do you trust the files in this folder",
            ],
            "{worker} shows Claude Code's trust question for {workspace}: run `claude` there once and answer it yourself, then `team-scale up` again",
        ),
        blocker(
            "api-key",
            &["Detected a custom API key"],
            "{worker} shows Claude Code's question about the custom API key: run `claude` once and answer it, then `team-scale up` again",
        ),
        blocker(
            "sign-in",
            &[
                "Select login method",
                "Choose the text style",
                "Log in with your Anthropic account",
            ],
            "{worker} shows Claude Code's first-run setup: run `claude` once and finish it (or `claude setup-token`), then `team-scale up` again",
        ),
    ];
    let mut gemini = Profile::base("gemini", "Gemini CLI", &["gemini"]);
    gemini.prompt_arg = Some(strs(&["-i", "{prompt}"]));
    gemini.busy = strs(&["esc to cancel", "Thinking"]);
    gemini.queue_cursor = strs(&[">"]);
    gemini.blocking = vec![
        blocker(
            "trust",
            &["Do you trust this folder", "Trust folder", "Don't trust"],
            "{worker} shows Gemini CLI's trust question for {workspace}: run `gemini` there once and answer it yourself (nothing was typed into it), then `team-scale up` again",
        ),
        blocker(
            "sign-in",
            &[
                "How would you like to authenticate",
                "Login with Google",
                "Waiting for auth",
            ],
            "{worker} shows Gemini CLI's sign-in question: run `gemini` once and sign in (or set GEMINI_API_KEY and selectedType in ~/.gemini/settings.json), then `team-scale up` again",
        ),
    ];
    let mut aider = Profile::base("aider", "aider", &["aider"]);
    aider.ready_cursor = strs(&["> "]);
    aider.busy = strs(&["Tokens:", "Waiting for"]);
    aider.blocking = vec![
        blocker(
            "first-run",
            &[
                "Add .aider* to .gitignore",
                "(Y)es/(N)o",
                "Create new git repo",
            ],
            "{worker} shows one of aider's first-run questions: run `aider` in {workspace} once and answer it (or add --no-gitignore --yes-always to the worker command), then `team-scale up` again",
        ),
        blocker(
            "api-key",
            &["No LLM model was specified", "API key", "api_key"],
            "{worker}'s aider has no model or API key: set one (e.g. OPENAI_API_KEY, or --model), then `team-scale up` again",
        ),
    ];
    let mut shell = Profile::base(
        "shell",
        "a shell",
        &["sh", "bash", "zsh", "dash", "ksh", "fish", "mksh"],
    );
    shell.banner = true;
    shell.stable_ms = 0;
    let mut custom = Profile::base("custom", "the worker program", &[]);
    custom.stable_ms = 300;
    custom.settle_ms = 100;
    custom.verify_ms = 1000;
    vec![codex, claude, gemini, aider, shell, custom]
}

/// The most bytes of `agents.toml` read.
pub const MAX_USER_FILE: usize = 256 * 1024;

/// Reads the user's profiles from `<root>/agents.toml` (none when the file does not exist).
pub fn load_user(root: &Path) -> Result<Vec<Profile>> {
    // A state file: reached with no symlink at any component (its commands start agents).
    let path = root.join("agents.toml");
    let Some(bytes) = crate::fsutil::state_read(root, &path, MAX_USER_FILE as u64)? else {
        return Ok(Vec::new());
    };
    parse_user(&bytes)
}

/// Parses the user's profiles (pure).
pub fn parse_user(bytes: &[u8]) -> Result<Vec<Profile>> {
    let bad = |msg: String| Error::MalformedInput {
        what: "agents.toml".into(),
        msg,
    };
    if bytes.len() > MAX_USER_FILE {
        return Err(bad(format!("larger than {MAX_USER_FILE} bytes")));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8".into()))?;
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        #[serde(default)]
        agents: BTreeMap<String, Profile>,
    }
    let f: File = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
    let mut out = Vec::new();
    for (name, mut p) in f.agents {
        p.name = name;
        p.check()?;
        out.push(p);
    }
    Ok(out)
}

/// The profile named `name`: the user's first, then the built-ins.
pub fn resolve(name: &str, user: &[Profile]) -> Result<Profile> {
    user.iter()
        .cloned()
        .chain(builtins())
        .find(|p| p.name == name)
        .ok_or_else(|| {
            let mut names: Vec<String> = builtins().into_iter().map(|p| p.name).collect();
            names.extend(user.iter().map(|p| p.name.clone()));
            Error::Usage(format!(
                "no agent profile {name:?} (known: {}; define your own in agents.toml)",
                names.join(", ")
            ))
        })
}

/// The program a worker command starts: its first word after `exec`, `env` and variable
/// assignments, without its directory. `None` when the command is not a plain word list (it
/// holds quotes, `$`, or other shell syntax before the program).
pub fn program_of(cmd: &str) -> Option<String> {
    let w = program_word(cmd)?;
    let base = w.rsplit('/').next().unwrap_or(&w);
    (!base.is_empty()).then(|| base.to_string())
}

/// Shell keywords and builtins that may start a worker command: the program it runs cannot be
/// told without a shell parser, so neither detection nor the PATH check applies.
const SHELL_WORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "while", "until", "do", "done",
    "function", "select", "time", "cd", "export", "set", "unset", "trap", "ulimit", "umask",
    "source", ".", "eval", "read", "wait", "test", "alias", "builtin", "local", "readonly",
    "shift", "type",
];

/// The program word of a worker command as written (a name or a path); see [`program_of`].
pub fn program_word(cmd: &str) -> Option<String> {
    let mut words = cmd.split_whitespace();
    loop {
        let w = words.next()?;
        if w == "exec" || w == "env" || w == "command" || w == "nohup" {
            continue;
        }
        if let Some((k, _)) = w.split_once('=')
            && !k.is_empty()
            && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            continue;
        }
        if w.bytes().any(|b| b"$`\"'\\;&|<>(){}*?[]~!".contains(&b)) || SHELL_WORDS.contains(&w) {
            return None;
        }
        return Some(w.to_string());
    }
}

/// The profile a worker command selects: the one listing its program, else `shell` for the
/// default `$SHELL` command, else `custom`.
pub fn detect(cmd: &str, user: &[Profile]) -> String {
    if cmd.contains("${SHELL") || cmd.contains("$SHELL") {
        return "shell".into();
    }
    let Some(prog) = program_of(cmd) else {
        return "custom".into();
    };
    user.iter()
        .chain(builtins().iter())
        .find(|p| p.programs.contains(&prog))
        .map_or_else(|| "custom".into(), |p| p.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection() {
        let none: Vec<Profile> = Vec::new();
        assert_eq!(detect("codex", &none), "codex");
        assert_eq!(detect("exec /usr/local/bin/claude --x", &none), "claude");
        assert_eq!(detect("FOO=1 gemini", &none), "gemini");
        assert_eq!(detect("exec \"${SHELL:-/bin/sh}\"", &none), "shell");
        assert_eq!(detect("bash", &none), "shell");
        assert_eq!(detect("exec sleep 100", &none), "custom");
        assert_eq!(detect("echo hi; exec cat", &none), "custom");
        assert_eq!(program_of("echo hi; exec cat").as_deref(), Some("echo"));
        assert_eq!(program_of("$(x)"), None);
        assert_eq!(program_of("if [ \"$X\" = 1 ]; then exec cat; fi"), None);
        assert_eq!(program_of("cd /x && codex"), None);
        let user = parse_user(b"[agents.fake]\nprograms=[\"fake-agent\"]\n").unwrap();
        assert_eq!(detect("/x/fake-agent --trust", &user), "fake");
    }

    #[test]
    fn user_file_errors_name_the_problem() {
        let e = parse_user(b"[agents.x]\nprompt_arg=[\"-p\"]\n").unwrap_err();
        assert!(e.to_string().contains("{prompt}"), "{e}");
        let e = parse_user(b"[agents.x]\ncolour=1\n").unwrap_err();
        assert!(e.to_string().contains("colour"), "{e}");
        let e = parse_user(b"[agents.\"Bad Name\"]\n").unwrap_err();
        assert!(e.to_string().contains("Bad Name"), "{e}");
        assert!(resolve("nope", &[]).is_err());
        let p = parse_user(b"[agents.codex]\nbanner=true\n").unwrap();
        assert!(
            resolve("codex", &p).unwrap().banner,
            "the user's profile wins"
        );
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_give_profiles_or_an_error(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = parse_user(&b);
        }
    }

    /// `agents.toml` names the commands that start agents: a state file, never read through
    /// a symlink (a swapped one would start the attacker's command as every agent).
    #[test]
    fn agents_toml_is_never_read_through_a_symlink() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join(".team");
        std::fs::create_dir(&root).unwrap();
        assert!(load_user(&root).unwrap().is_empty(), "absent: none");
        // The root itself swapped for a symlink to a directory holding an `agents.toml`.
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("agents.toml"), "").unwrap();
        std::fs::remove_dir(&root).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &root).unwrap();
        let e = load_user(&root).unwrap_err();
        assert_eq!(e.class().code(), 65, "{e}");
    }
}
