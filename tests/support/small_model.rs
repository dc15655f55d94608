//! The real small model on a real llama.cpp server (both installed by `scripts/small-model`), for
//! the window tests that are ignored unless asked for (`CODEWRIGHT_LOCAL_MODEL=1 scripts/test`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Why a test that needs the model does not run without it.
pub const NEEDS_IT: &str = "needs the small model: CODEWRIGHT_LOCAL_MODEL=1 scripts/test";

/// llama-server with Qwen2.5-Coder-1.5B on the CPU, greedy (the same answer each run); stopped
/// when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
}

impl Server {
    /// Starts it as `scripts/small-model` says and waits (up to 3 minutes) for the model to load.
    pub fn start() -> Server {
        let binary = std::env::var("CODEWRIGHT_SMALL_MODEL_SERVER").expect(NEEDS_IT);
        let gguf = std::env::var("CODEWRIGHT_SMALL_MODEL_GGUF").expect(NEEDS_IT);
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(binary)
            .args([
                "-m", &gguf, "-ngl", "0", "-t", "2", "--jinja", "-c", "16384",
            ])
            .args(["-np", "1", "--temp", "0", "--seed", "42"])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(180);
        while !server.ready() {
            assert!(Instant::now() < deadline, "llama-server did not start");
            std::thread::sleep(Duration::from_millis(250));
        }
        server
    }

    /// Its OpenAI-compatible API.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// `/health` answers 200 once the model is loaded (503 while it loads).
    fn ready(&self) -> bool {
        let Ok(mut sock) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = sock.write_all(b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
        let mut head = String::new();
        let _ = BufReader::new(sock).read_line(&mut head);
        head.contains(" 200 ")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
