//! Shared set-up for the end-to-end tests: a private X server, tauri-driver, and paths.

// Each test binary uses a part of the support code.
#[allow(dead_code)]
pub mod keyring;
#[allow(dead_code)]
pub mod notifications;
#[allow(dead_code)]
pub mod provider;
#[allow(dead_code)]
pub mod small_model;
#[allow(dead_code)]
pub mod webdriver;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Desktops run one at a time: two WebKit instances starting at once on a 2-core machine can
/// starve a web process long enough for WebKitWebDriver to declare the page hung.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The scripted provider's API key (tests/support/provider.rs), in the environment of every app
/// and `exec` the tests start. Every desktop checks at its end that it is written nowhere.
pub const KEY: &str = "sk-e2e-3f9Qd7LmX2vB8nW4";

/// A secret value an MCP server is given in a test; like [`KEY`], written nowhere.
pub const MCP_SECRET: &str = "tok-never-shown-3c81e5a0";

/// The file, among a desktop's own folders, that holds what its app, driver and X server printed.
const LOG: &str = "printed.log";

/// An X server, tauri-driver (with WebKitWebDriver) and a data folder for one test. Everything is
/// stopped on drop, the driver's whole process group included, so no WebKitWebDriver is orphaned.
pub struct Desktop {
    _turn: MutexGuard<'static, ()>,
    xvfb: Child,
    driver: Child,
    pub port: u16,
    /// The X display the apps show on.
    #[allow(dead_code)] // not every test binary starts the app itself
    pub display: String,
    /// The app's own XDG data and cache folders: what the web views keep (localStorage: the
    /// last project, the theme) stays with this desktop, so no test sees another's.
    xdg: tempfile::TempDir,
    /// The app's data folder.
    home: PathBuf,
}

/// Two free ports for tauri-driver and its WebKitWebDriver, distinct: both are held while the
/// second is chosen (a port let go is free again, and was once handed out twice in a row — the
/// driver then forwarded every request to itself).
fn free_ports() -> (u16, u16) {
    let bind = || TcpListener::bind("127.0.0.1:0").unwrap();
    let (one, two) = (bind(), bind());
    let port = |l: &TcpListener| l.local_addr().unwrap().port();
    (port(&one), port(&two))
}

/// Starts Xvfb on a display it picks itself (`-displayfd`): it prints the number once it is
/// listening, so there is no race for a display and no polling for its socket.
fn start_xvfb(log: &std::fs::File) -> (Child, String) {
    let mut child = Command::new("Xvfb")
        .args([
            "-displayfd",
            "1",
            "-screen",
            "0",
            "1280x800x24",
            "-nolisten",
            "tcp",
            // By default the server resets when its last client leaves — as a killed app's do
            // all at once —, and an app started meanwhile cannot open the display.
            "-noreset",
        ])
        .stdout(Stdio::piped())
        // With what the app prints: an app that cannot open the display is explained there.
        .stderr(log.try_clone().unwrap())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot start Xvfb ({e}); run scripts/setup --test to install it")
        });
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let number = line.trim();
    assert!(!number.is_empty(), "Xvfb exited without picking a display");
    (child, format!(":{number}"))
}

fn tauri_driver() -> PathBuf {
    let candidates = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/bin")));
    for dir in candidates {
        let path = dir.join("tauri-driver");
        if path.is_file() {
            return path;
        }
    }
    panic!("tauri-driver is not installed; run scripts/setup --test");
}

impl Desktop {
    /// Starts a private desktop whose app instances use the data folder `home`.
    pub fn start(home: &Path) -> Desktop {
        Desktop::start_with(home, &[])
    }

    /// Like [`Desktop::start`], with more environment for the app (`GTK_THEME=Adwaita:dark`).
    pub fn start_with(home: &Path, env: &[(&str, &str)]) -> Desktop {
        let turn = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let xdg = tempfile::tempdir().unwrap();
        // What the app (and the driver, and the X server) print goes to a file with the rest of
        // this desktop's folders, so that the secrets drill reads it too; it is shown when the
        // test fails.
        let log = std::fs::File::create(xdg.path().join(LOG)).unwrap();
        let (mut xvfb, display) = start_xvfb(&log);
        let start = |(port, native): (u16, u16)| {
            Command::new(tauri_driver())
                .args([
                    "--port",
                    &port.to_string(),
                    "--native-port",
                    &native.to_string(),
                ])
                .env("DISPLAY", &display)
                .env("CODEWRIGHT_HOME", home)
                .env("XDG_DATA_HOME", xdg.path().join("data"))
                .env("XDG_CACHE_HOME", xdg.path().join("cache"))
                // The key of the scripted provider (tests/support/provider.rs).
                .env("CODEWRIGHT_E2E_KEY", KEY)
                .envs(env.iter().copied())
                .env_remove("WAYLAND_DISPLAY")
                .stdout(log.try_clone().unwrap())
                .stderr(log.try_clone().unwrap())
                .process_group(0)
                .spawn()
                .expect("cannot start tauri-driver")
        };
        // A port is chosen free, then given to the drivers, so another process can take it in
        // between (any connection's own port comes from the same range). A driver that finds
        // its port taken quits (tauri-driver) or leaves it unserved (WebKitWebDriver): it is
        // then started again on other ports, and said so.
        let mut ports = free_ports();
        let mut port = ports.0;
        let mut driver = start(ports);
        let mut tries = 1;
        let mut started = std::time::Instant::now();
        loop {
            let failed = match webdriver::driver_state(port, &mut driver) {
                webdriver::DriverState::Answering => break,
                webdriver::DriverState::Starting if started.elapsed() < Duration::from_secs(20) => {
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
                webdriver::DriverState::Starting => format!("it did not answer on port {port}"),
                webdriver::DriverState::Gone(why) if tries < 5 => {
                    eprintln!("tauri-driver on port {port}: {why}; starting it on other ports");
                    kill_group(driver.id(), "-KILL");
                    let _ = driver.wait();
                    ports = free_ports();
                    port = ports.0;
                    driver = start(ports);
                    tries += 1;
                    started = std::time::Instant::now();
                    continue;
                }
                webdriver::DriverState::Gone(why) => why,
            };
            kill_group(driver.id(), "-KILL");
            let _ = driver.wait();
            let _ = xvfb.kill();
            let _ = xvfb.wait();
            panic!(
                "the WebDriver server did not start: {failed}; it printed:\n{}",
                std::fs::read_to_string(xdg.path().join(LOG)).unwrap_or_default()
            );
        }
        Desktop {
            _turn: turn,
            xvfb,
            driver,
            port,
            display,
            xdg,
            home: home.to_path_buf(),
        }
    }

    /// Launches the app (a new WebDriver session) and waits until its main window has rendered.
    /// An app launched before is first waited for until it has exited, as a person relaunching
    /// sees it gone first (else the new one would hand over to it and exit). Desktops of a test
    /// binary run one at a time.
    pub fn launch(&self) -> webdriver::Session {
        // Any: a quitting app may have left its driver's process tree already.
        let app = std::fs::canonicalize(env!("CARGO_BIN_EXE_codewright")).unwrap();
        let start = std::time::Instant::now();
        let running = || {
            std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
                std::fs::read_link(entry.path().join("exe")).is_ok_and(|exe| exe == app)
            })
        };
        while running() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the app launched before did not exit"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let session = webdriver::Session::start(self.port, env!("CARGO_BIN_EXE_codewright"))
            .unwrap_or_else(|e| {
                // The app's own words (and the X server's) are in the log printed after this.
                let xvfb = std::fs::read_to_string(format!("/proc/{}/stat", self.xvfb.id()))
                    .ok()
                    .and_then(|stat| {
                        Some(
                            stat.rsplit_once(')')?
                                .1
                                .split_whitespace()
                                .next()?
                                .to_string(),
                        )
                    })
                    .map_or("gone".to_string(), |state| format!("in state {state}"));
                panic!(
                    "cannot start a session: {e} (the X server {} is {xvfb})",
                    self.display
                )
            });
        session.wait_until("the main window to render", Duration::from_secs(20),
            "return document.body.dataset.ready === 'true' || !document.getElementById('fatal').hidden",
            |v| v == true);
        session
    }

    /// SIGKILLs the running app (the one this desktop's driver launched), as a crash would, and
    /// waits until it is gone. Its WebDriver session is dead afterwards; `launch` starts anew.
    #[allow(dead_code)] // not every test binary crashes the app
    pub fn kill_app(&self) {
        let pids = self.app_pids();
        assert!(!pids.is_empty(), "the app is not running");
        for pid in &pids {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        let start = std::time::Instant::now();
        while pids
            .iter()
            .any(|pid| Path::new(&format!("/proc/{pid}/exe")).exists())
        {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the app did not die"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (up to `timeout`) for the app this desktop's driver launched to have exited.
    #[allow(dead_code)] // not every test binary closes the app's windows
    pub fn wait_app_gone(&self, timeout: Duration) {
        let start = std::time::Instant::now();
        while !self.app_pids().is_empty() {
            assert!(start.elapsed() < timeout, "the app kept running");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The running app and each WebKit process below it: pid, name and soft `RLIMIT_RTTIME` in
    /// microseconds (`None`: unlimited), as `/proc/PID/limits` says.
    #[allow(dead_code)] // one test binary looks
    pub fn real_time_limits(&self) -> Vec<(u32, String, Option<u64>)> {
        self.app_pids()
            .into_iter()
            .flat_map(|app| std::iter::once(app).chain(descendants(app)))
            .filter_map(|pid| {
                let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
                let name = name.trim();
                if name != "codewright" && !name.starts_with("WebKit") {
                    return None;
                }
                let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
                let soft = limits
                    .lines()
                    .find_map(|l| l.strip_prefix("Max realtime timeout"))?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok();
                Some((pid, name.to_string(), soft))
            })
            .collect()
    }

    /// The processes of the app this desktop's driver launched.
    fn app_pids(&self) -> Vec<u32> {
        let app = std::fs::canonicalize(env!("CARGO_BIN_EXE_codewright")).unwrap();
        descendants(self.driver.id())
            .into_iter()
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == app)
            })
            .collect()
    }
}

/// Every process below `root` (from /proc).
#[allow(dead_code)]
fn descendants(root: u32) -> Vec<u32> {
    let mut children: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The parent is the second field after the command's closing parenthesis.
        if let Some(ppid) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok())
        {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let (mut out, mut todo) = (Vec::new(), vec![root]);
    while let Some(pid) = todo.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            out.push(*child);
            todo.push(*child);
        }
    }
    out
}

impl Drop for Desktop {
    fn drop(&mut self) {
        // TERM the group: tauri-driver stops WebKitWebDriver only on SIGTERM/SIGINT.
        kill_group(self.driver.id(), "-TERM");
        let _ = self.driver.wait();
        // TERM, not KILL: Xvfb then removes its lock file and socket.
        let _ = Command::new("kill")
            .args(["-TERM", &self.xvfb.id().to_string()])
            .status();
        let _ = self.xvfb.wait();
        // Captured by the test harness: shown with a failure.
        if let Ok(printed) = std::fs::read_to_string(self.xdg.path().join(LOG)) {
            eprint!("{printed}");
        }
        // The secrets drill, for every desktop scenario: the provider's key reached no file of
        // the data folder (the database, its log, attachments), nothing the web views keep, and
        // nothing the app printed.
        if !std::thread::panicking() {
            for folder in [self.home.as_path(), self.xdg.path()] {
                for secret in [KEY, MCP_SECRET] {
                    if let Some(file) = file_containing(folder, secret.as_bytes()) {
                        panic!("the secret {secret} was written to {}", file.display());
                    }
                }
            }
        }
    }
}

/// Makes `e2e-model@scripted` (the scripted provider at `base_url`, its key in
/// `CODEWRIGHT_E2E_KEY`; it takes images) the main model of the data folder `data`.
#[allow(dead_code)] // not every test binary sets up a model
pub fn use_scripted_model(data: &Path, base_url: &str) {
    cli(
        data,
        &[
            "providers",
            "add",
            "scripted",
            "--protocol",
            "openai",
            "--base-url",
            base_url,
            "--api-key-env",
            "CODEWRIGHT_E2E_KEY",
        ],
    );
    cli(
        data,
        &[
            "models",
            "add",
            "e2e-model@scripted",
            "--context",
            "100000",
            "--images",
            "--input-price",
            "3",
            "--output-price",
            "15",
        ],
    );
    cli(data, &["models", "role", "main", "e2e-model@scripted"]);
}

/// The first file under `folder` that contains `needle`.
fn file_containing(folder: &Path, needle: &[u8]) -> Option<PathBuf> {
    let entries = std::fs::read_dir(folder).ok()?;
    entries.flatten().find_map(|entry| {
        let path = entry.path();
        let kind = entry.file_type().ok()?;
        if kind.is_dir() {
            file_containing(&path, needle)
        } else if kind.is_file() {
            let bytes = std::fs::read(&path).ok()?;
            bytes
                .windows(needle.len())
                .any(|w| w == needle)
                .then_some(path)
        } else {
            None
        }
    })
}

/// Sends `signal` (`-TERM`, `-KILL`) to the process group `pid` leads. (A tauri-driver that
/// forwards to itself never handles TERM.)
fn kill_group(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([signal, "--", &format!("-{pid}")])
        .status();
}

/// The cargo target folder (where screenshots are saved) and the built `codewright-cli`.
pub fn target_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

#[allow(dead_code)]
pub fn cli_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("codewright-cli");
    assert!(
        path.is_file(),
        "{} is missing; build it with `cargo build -p codewright-cli` (the test command does)",
        path.display()
    );
    path
}

/// Saves a screenshot under `<target>/e2e-screenshots/`.
pub fn save_screenshot(name: &str, png: &[u8]) -> PathBuf {
    let path = write_screenshot(name, png).unwrap();
    assert!(
        png.starts_with(b"\x89PNG"),
        "screenshot {name} is not a PNG"
    );
    path
}

/// Writes `<target>/e2e-screenshots/<name>.png`, or says why not.
fn write_screenshot(name: &str, png: &[u8]) -> std::io::Result<PathBuf> {
    let dir = target_dir().join("e2e-screenshots");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{name}.png"));
    std::fs::write(&path, png)?;
    Ok(path)
}

/// Runs `codewright-cli --home <home> args…` and returns stdout; panics on failure.
pub fn cli(home: &Path, args: &[&str]) -> String {
    let out = Command::new(cli_binary())
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "codewright-cli {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A private D-Bus session bus: its daemon, and its address for `DBUS_SESSION_BUS_ADDRESS`.
#[allow(dead_code)] // not every test binary needs a bus
pub fn session_bus() -> (Child, String) {
    let mut daemon = Command::new("dbus-daemon")
        .args(["--session", "--nofork", "--print-address=1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("dbus-daemon is not installed; run scripts/setup --test");
    let mut address = String::new();
    BufReader::new(daemon.stdout.take().unwrap())
        .read_line(&mut address)
        .unwrap();
    (daemon, address.trim().to_string())
}

/// A process a test started, killed when the test ends — also when it fails midway, so a failed
/// test never leaves a run waiting (holding the test's output open).
#[allow(dead_code)] // not every test binary starts one
pub struct Reaped(pub std::process::Child);

impl std::ops::Deref for Reaped {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Reaped {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
