//! What installed skills and commands cost (BENCHMARKS.md, issue 14), side by side in one run:
//! the system prompt's size with 50 skills (names and descriptions only) next to none; the time to
//! discover 500 skill folders and 500 command files; and, with a path to a release
//! `codewright-cli`, `exec` cold start to the first request with 500 skills in the user's home
//! next to none (interleaved runs, median of 9 each).
//!
//! Usage: bench_skills [CODEWRIGHT_CLI]

#[path = "../tests/common/mod.rs"]
mod common;

use codewright_extensions::{commands, skills, Places};
use common::text;
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A description of a realistic length (Anthropic's published skills run 100–300 characters).
fn description(i: usize) -> String {
    format!("Skill number {i} — create, edit and check documents of kind {i}, with their forms, tables and comments; use when the user asks for kind {i} files.")
}

fn install(home: &Path, skills: usize, commands: usize) {
    // Installed a day ago, as a user's skills are (a file modified in the last 2 s is never
    // taken from the cache of what was read).
    let a_day_ago = std::time::SystemTime::now() - Duration::from_secs(86_400);
    for i in 0..skills {
        let dir = home.join(format!(".claude/skills/skill-{i}"));
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!(
                "---\nname: skill-{i}\ndescription: {}\n---\n\n# Skill {i}\n\n{}\n",
                description(i),
                "Step. ".repeat(300)
            ),
        )
        .unwrap();
        std::fs::File::options()
            .write(true)
            .open(dir.join("SKILL.md"))
            .unwrap()
            .set_modified(a_day_ago)
            .unwrap();
        std::fs::write(dir.join("scripts/run.py"), "print('ok')\n").unwrap();
    }
    let folder = home.join(".claude/commands");
    std::fs::create_dir_all(&folder).unwrap();
    for i in 0..commands {
        std::fs::write(
            folder.join(format!("cmd-{i}.md")),
            format!("---\ndescription: Command {i}\n---\nDo thing {i} with $ARGUMENTS.\n"),
        )
        .unwrap();
    }
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let project = tempfile::tempdir().unwrap();
    let none = tempfile::tempdir().unwrap();
    let fifty = tempfile::tempdir().unwrap();
    let many = tempfile::tempdir().unwrap();
    install(fifty.path(), 50, 0);
    install(many.path(), 500, 500);
    let places = |home: &Path| Places {
        project: project.path().to_path_buf(),
        home: Some(home.to_path_buf()),
        cache: None,
        project_trusted: true,
    };
    let data = tempfile::tempdir().unwrap();
    let cached = |home: &Path| Places {
        cache: Some(data.path().to_path_buf()),
        project_trusted: true,
        ..places(home)
    };

    let prompt = |home: &Path| {
        let installed = codewright_extensions::Installed {
            skills: skills::discover(&places(home)),
            places: None,
            agent: None,
        };
        codewright_agent::system_prompt(project.path(), "", "", &installed, "2026-11-25", false)
            .text
            .len()
    };
    let (bare, with) = (prompt(none.path()), prompt(fifty.path()));
    println!(
        "system prompt: {bare} bytes with no skills, {with} bytes with 50 (+{} bytes, ~{} tokens, {:.0} bytes a skill)",
        with - bare,
        (with - bare) / 4,
        (with - bare) as f64 / 50.0
    );

    // Warm (the page cache holds the files, as it does for a user who ran anything recently).
    let mut found = (0, 0);
    let (mut skill_times, mut cached_times, mut command_times, mut empty_times) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    skills::discover(&cached(many.path())); // fills the cache
    for _ in 0..21 {
        let start = Instant::now();
        found.0 = skills::discover(&places(many.path())).skills.len();
        skill_times.push(start.elapsed());
        let start = Instant::now();
        assert_eq!(skills::discover(&cached(many.path())).skills.len(), 500);
        cached_times.push(start.elapsed());
        let start = Instant::now();
        found.1 = commands::discover(&places(many.path())).commands.len();
        command_times.push(start.elapsed());
        let start = Instant::now();
        skills::discover(&places(none.path()));
        commands::discover(&places(none.path()));
        empty_times.push(start.elapsed());
    }
    assert_eq!(found, (500, 500));
    println!(
        "discovery, median of 21: {} skill folders {:.2} ms (with what was read cached: {:.2} ms), {} command files {:.2} ms, none of either {:.3} ms",
        found.0,
        ms(median(&mut skill_times)),
        ms(median(&mut cached_times)),
        found.1,
        ms(median(&mut command_times)),
        ms(median(&mut empty_times))
    );

    if let Some(cli) = std::env::args().nth(1) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(exec_cold_start(
            &cli,
            project.path(),
            none.path(),
            many.path(),
        ));
    }
}

/// `exec` start to the first request at the provider, with the user's home holding nothing, then
/// 500 skills and 500 commands (what was read of them cached by the run before), then the same
/// with nothing cached, interleaved.
async fn exec_cold_start(cli: &str, project: &Path, none: &Path, many: &Path) {
    let arrived = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let seen = arrived.clone();
    let server = common::serve(Arc::new(move |_, _: &Value| {
        seen.lock().unwrap().push(Instant::now());
        text("done")
    }))
    .await;
    let data = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(cli)
        .arg("--home")
        .arg(data.path())
        .args([
            "providers",
            "add",
            "scripted",
            "--protocol",
            "openai",
            "--base-url",
            &server.url,
        ])
        .status()
        .unwrap();
    assert!(status.success());
    // A model of known size: a local server's model of unknown size is first asked for its
    // window (a few requests of its own), which is not what this measures.
    let status = std::process::Command::new(cli)
        .arg("--home")
        .arg(data.path())
        .args([
            "models",
            "add",
            "test-model@scripted",
            "--context",
            "128000",
        ])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    // The third: the same 500, each run the first after they were installed (nothing of them
    // cached yet: every SKILL.md read, and the cache written).
    let mut times = [Vec::new(), Vec::new(), Vec::new()];
    // Round 0 warms up (and writes the cache the second configuration reads); it is not counted.
    for round in 0..10 {
        for (which, home) in [none, many, many].into_iter().enumerate() {
            if which == 2 {
                // (The CLI's own cache: `skills-codewright-cli.json` in its data folder.)
                let cache = data.path().join("cache/skills-codewright-cli.json");
                std::fs::remove_file(&cache)
                    .unwrap_or_else(|e| panic!("the run before wrote no {}: {e}", cache.display()));
            }
            arrived.lock().unwrap().clear();
            let start = Instant::now();
            let mut child = std::process::Command::new(cli)
                .arg("--home")
                .arg(data.path())
                .args([
                    "exec",
                    "--model",
                    "test-model@scripted",
                    "--max-iterations",
                    "1",
                    "hello",
                ])
                .env("HOME", home)
                .current_dir(project)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            loop {
                if let Some(first) = arrived.lock().unwrap().first() {
                    if round > 0 {
                        times[which].push(*first - start);
                    }
                    break;
                }
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
            let _ = child.wait();
        }
    }
    let [a, b, c] = times.map(|mut t| median(&mut t));
    println!(
        "exec cold start → first request, median of 9: {:.1} ms with nothing installed, {:.1} ms with 500 skills and 500 commands (×{:.2}), {:.1} ms the first time after installing them (×{:.2})",
        ms(a),
        ms(b),
        b.as_secs_f64() / a.as_secs_f64(),
        ms(c),
        c.as_secs_f64() / a.as_secs_f64()
    );
}
