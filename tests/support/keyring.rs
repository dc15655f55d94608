//! A real system keyring for a test: a private D-Bus session bus with GNOME Keyring's Secret
//! Service on it, its login keyring unlocked, its files in a temporary folder. The app finds it
//! through `DBUS_SESSION_BUS_ADDRESS`, as it would on a desktop.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct SecretService {
    bus: Child,
    keyring: Child,
    _home: tempfile::TempDir,
    /// For the app's `DBUS_SESSION_BUS_ADDRESS`.
    pub address: String,
}

impl SecretService {
    pub fn start() -> SecretService {
        let home = tempfile::tempdir().unwrap();
        let (bus, address) = super::session_bus();
        let runtime = home.path().join("run");
        std::fs::create_dir_all(&runtime).unwrap();
        let mut keyring = Command::new("gnome-keyring-daemon")
            .args(["--foreground", "--unlock", "--components=secrets"])
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .env("HOME", home.path())
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("XDG_RUNTIME_DIR", &runtime)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("gnome-keyring-daemon is not installed; run scripts/setup --test");
        // The login keyring's password, then end of input: it creates the keyring unlocked.
        let mut stdin = keyring.stdin.take().unwrap();
        stdin.write_all(b"e2e-keyring-password").unwrap();
        drop(stdin);
        let service = SecretService {
            bus,
            keyring,
            _home: home,
            address,
        };
        service.wait_until_served(Duration::from_secs(15));
        service
    }

    /// The app's environment for this keyring.
    pub fn env(&self) -> [(&str, &str); 3] {
        [
            ("DBUS_SESSION_BUS_ADDRESS", &self.address),
            ("NO_AT_BRIDGE", "1"),
            ("GTK_A11Y", "none"),
        ]
    }

    /// Waits until the keyring owns the Secret Service's name on the bus, then until its login
    /// collection is unlocked. The name is asked of the bus itself first: a call to the Secret
    /// Service before the keyring owns the name would make the bus start another, locked one
    /// (D-Bus activation), and ours would then find the name taken.
    fn wait_until_served(&self, timeout: Duration) {
        let start = Instant::now();
        let bus = format!("--bus={}", self.address);
        let ask = |args: &[&str]| {
            let out = Command::new("dbus-send")
                .args([bus.as_str(), "--print-reply"])
                .args(args)
                .output()
                .expect("dbus-send is not installed; run scripts/setup --test");
            (
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        };
        let mut owned = false;
        loop {
            let (answer, error) = if owned {
                ask(&[
                    "--dest=org.freedesktop.secrets",
                    "/org/freedesktop/secrets/aliases/default",
                    "org.freedesktop.DBus.Properties.Get",
                    "string:org.freedesktop.Secret.Collection",
                    "string:Locked",
                ])
            } else {
                ask(&[
                    "--dest=org.freedesktop.DBus",
                    "/org/freedesktop/DBus",
                    "org.freedesktop.DBus.NameHasOwner",
                    "string:org.freedesktop.secrets",
                ])
            };
            if !owned && answer.contains("boolean true") {
                owned = true;
                continue;
            }
            if owned && answer.contains("boolean false") {
                return;
            }
            assert!(
                start.elapsed() < timeout,
                "the test keyring did not start: {error}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for SecretService {
    fn drop(&mut self) {
        for child in [&mut self.keyring, &mut self.bus] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
