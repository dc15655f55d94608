//! API keys: the OS keyring (service `codewright`, one entry per provider), falling back to the
//! provider's environment variable. Keys are only ever returned to the caller that sends the
//! request: never stored in SQLite, logged, put in events or in error messages.

use crate::provider::Provider;

/// The keyring service name.
pub const SERVICE: &str = "codewright";

/// Somewhere keys are kept. The OS keyring in the app; an in-memory store in tests.
pub trait SecretStore: Send + Sync {
    /// The key for `provider`, if one is stored. `Err` says why the store cannot be used.
    fn get(&self, provider: &str) -> Result<Option<String>, KeyError>;
    fn set(&self, provider: &str, key: &str) -> Result<(), KeyError>;
    /// Removes the key; `Ok(false)` if there was none.
    fn delete(&self, provider: &str) -> Result<bool, KeyError>;
}

/// The operating system's keyring (Secret Service on Linux, Keychain, Credential Manager).
pub struct OsKeyring;

/// Why a key could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The keyring cannot be used (its own reason).
    #[error(
        "the system keyring is not available ({0}); on Linux it needs a Secret Service such as \
         GNOME Keyring or KWallet. Keys in environment variables still work."
    )]
    Unavailable(String),
    /// No key in the keyring, nor in the provider's environment variable.
    #[error("no API key for {provider}: keep one in the system keyring, or set {var}{keyring}")]
    Missing {
        provider: String,
        var: String,
        /// Why the keyring could not be asked, when it could not (` (…)`), else empty.
        keyring: String,
    },
}

impl KeyError {
    /// Either way the run has no key to send: the way out is one in the keyring or the
    /// environment.
    pub fn kind(&self) -> codewright_protocol::ErrorKind {
        codewright_protocol::ErrorKind::MissingKey
    }
}

fn unavailable(e: keyring::Error) -> KeyError {
    KeyError::Unavailable(e.to_string())
}

impl SecretStore for OsKeyring {
    fn get(&self, provider: &str) -> Result<Option<String>, KeyError> {
        let entry = keyring::Entry::new(SERVICE, provider).map_err(unavailable)?;
        match entry.get_password() {
            Ok(key) => Ok(Some(key)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(unavailable(e)),
        }
    }

    fn set(&self, provider: &str, key: &str) -> Result<(), KeyError> {
        let entry = keyring::Entry::new(SERVICE, provider).map_err(unavailable)?;
        entry.set_password(key).map_err(unavailable)
    }

    fn delete(&self, provider: &str) -> Result<bool, KeyError> {
        let entry = keyring::Entry::new(SERVICE, provider).map_err(unavailable)?;
        match entry.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(unavailable(e)),
        }
    }
}

/// Where a key was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    Keyring,
    Env(String),
    /// The provider needs no key (a local server).
    NotNeeded,
}

/// Finds the key for `provider`: keyring first, then its environment variable. `env` reads a
/// variable (the real environment in the app). The error says exactly how to provide a key.
pub fn find_key(
    store: &dyn SecretStore,
    provider: &Provider,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(Option<String>, KeySource), KeyError> {
    let keyring = store.get(&provider.name);
    if let Ok(Some(key)) = &keyring {
        return Ok((Some(key.clone()), KeySource::Keyring));
    }
    if let Some(var) = &provider.api_key_env {
        if let Some(key) = env(var).filter(|k| !k.trim().is_empty()) {
            return Ok((Some(key.trim().to_string()), KeySource::Env(var.clone())));
        }
    } else {
        return Ok((None, KeySource::NotNeeded));
    }
    let var = provider.api_key_env.as_deref().unwrap_or_default();
    Err(KeyError::Missing {
        provider: provider.name.clone(),
        var: var.to_string(),
        keyring: match keyring {
            Err(why) => format!(" ({why})"),
            Ok(_) => String::new(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Protocol;
    use std::collections::HashMap;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Memory(Mutex<HashMap<String, String>>);
    impl SecretStore for Memory {
        fn get(&self, p: &str) -> Result<Option<String>, KeyError> {
            Ok(self.0.lock().unwrap().get(p).cloned())
        }
        fn set(&self, p: &str, k: &str) -> Result<(), KeyError> {
            self.0.lock().unwrap().insert(p.into(), k.into());
            Ok(())
        }
        fn delete(&self, p: &str) -> Result<bool, KeyError> {
            Ok(self.0.lock().unwrap().remove(p).is_some())
        }
    }
    struct Broken;
    impl SecretStore for Broken {
        fn get(&self, _: &str) -> Result<Option<String>, KeyError> {
            Err(KeyError::Unavailable("no Secret Service".into()))
        }
        fn set(&self, _: &str, _: &str) -> Result<(), KeyError> {
            Err(KeyError::Unavailable("no Secret Service".into()))
        }
        fn delete(&self, _: &str) -> Result<bool, KeyError> {
            Err(KeyError::Unavailable("no Secret Service".into()))
        }
    }

    fn anthropic() -> Provider {
        Provider::new(
            "anthropic",
            Protocol::Anthropic,
            "https://api.anthropic.com",
            Some("ANTHROPIC_API_KEY"),
        )
    }

    #[test]
    fn keyring_first_then_environment() {
        let store = Memory::default();
        let env = |v: &str| (v == "ANTHROPIC_API_KEY").then(|| "sk-env".to_string());
        assert_eq!(
            find_key(&store, &anthropic(), env).unwrap(),
            (
                Some("sk-env".into()),
                KeySource::Env("ANTHROPIC_API_KEY".into())
            )
        );
        store.set("anthropic", "sk-ring").unwrap();
        assert_eq!(
            find_key(&store, &anthropic(), env).unwrap(),
            (Some("sk-ring".into()), KeySource::Keyring)
        );
    }

    #[test]
    fn no_keyring_still_allows_environment_keys_and_explains_itself() {
        let env = |v: &str| (v == "ANTHROPIC_API_KEY").then(|| "sk-env".to_string());
        assert_eq!(
            find_key(&Broken, &anthropic(), env).unwrap().0.as_deref(),
            Some("sk-env")
        );
        let err = find_key(&Broken, &anthropic(), |_| None).unwrap_err();
        assert_eq!(err.kind(), codewright_protocol::ErrorKind::MissingKey);
        let err = err.to_string();
        assert!(
            err.contains("no API key for anthropic")
                && err.contains("ANTHROPIC_API_KEY")
                && err.contains("no Secret Service"),
            "{err}"
        );
    }

    #[test]
    fn the_os_keyring_degrades_to_a_clear_error_and_never_panics() {
        // On a desktop this finds no entry; on a headless machine (CI) there is no Secret
        // Service. Either way: an answer, not a crash.
        match OsKeyring.get("codewright-test-nonexistent-provider") {
            Ok(found) => assert_eq!(found, None),
            Err(why) => assert!(
                why.to_string().contains("system keyring is not available")
                    && why.to_string().contains("environment"),
                "{why}"
            ),
        }
    }

    #[test]
    fn local_servers_need_no_key() {
        let ollama = Provider::new(
            "ollama",
            Protocol::OpenAiChat,
            "http://localhost:11434",
            None,
        );
        assert_eq!(
            find_key(&Broken, &ollama, |_| None).unwrap(),
            (None, KeySource::NotNeeded)
        );
    }
}
