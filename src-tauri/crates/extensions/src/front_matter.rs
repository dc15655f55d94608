//! Markdown files that start with YAML front matter between `---` lines (skills, commands, task
//! files).

use serde_yaml_ng::{Mapping, Value};

/// A Markdown file split into its front matter and its body.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub fields: Mapping,
    pub body: String,
}

impl Document {
    /// A field's text (`None` when it is absent); a field that is not text is an error naming it.
    pub fn text(&self, field: &str) -> Result<Option<String>, String> {
        match self.fields.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
            Some(Value::Bool(b)) => Ok(Some(b.to_string())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(format!("`{field}` must be text")),
        }
    }
}

/// Splits `text` into front matter and body. A file without front matter is an error when
/// `required`, else all body. Errors say what is wrong in the words of someone editing the file.
pub fn parse(text: &str, required: bool) -> Result<Document, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let opened = lines.next().is_some_and(|l| l.trim_end() == "---");
    if !opened {
        if required {
            return Err("it does not start with front matter (a `---` line, then `name:` and `description:`, then `---`)".into());
        }
        return Ok(Document {
            fields: Mapping::new(),
            body: text.to_string(),
        });
    }
    let mut yaml = String::new();
    let mut closed = false;
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err("its front matter has no closing `---` line".into());
    }
    let body: String = lines.collect();
    let fields = match serde_yaml_ng::from_str::<Value>(&yaml) {
        Ok(Value::Mapping(m)) => m,
        Ok(Value::Null) => Mapping::new(),
        Ok(_) => return Err("its front matter is not a list of `key: value` lines".into()),
        Err(e) => {
            // The YAML error's line counts from the front matter; the file has `---` above it.
            let at = e
                .location()
                .map(|l| format!(" (line {})", l.line() + 1))
                .unwrap_or_default();
            let what = e.to_string();
            let what = what.split(" at line ").next().unwrap_or(&what);
            return Err(format!("its front matter is not valid YAML{at}: {what}"));
        }
    };
    Ok(Document {
        fields,
        body: body.trim_start_matches(['\r', '\n']).to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_and_body_are_split() {
        let doc = parse(
            "---\nname: pdf\ndescription: >\n  Read PDFs\n  and forms\n---\n\n# PDF\nbody\n",
            true,
        )
        .unwrap();
        assert_eq!(doc.text("name").unwrap().as_deref(), Some("pdf"));
        assert_eq!(
            doc.text("description").unwrap().as_deref(),
            Some("Read PDFs and forms")
        );
        assert_eq!(doc.body, "# PDF\nbody\n");
        let crlf = parse("\u{feff}---\r\nname: x\r\n---\r\nbody", true).unwrap();
        assert_eq!(crlf.text("name").unwrap().as_deref(), Some("x"));
        assert_eq!(crlf.body, "body");
    }

    #[test]
    fn broken_front_matter_says_what_is_wrong() {
        assert!(parse("# no front matter", true)
            .unwrap_err()
            .contains("does not start with front matter"));
        assert_eq!(parse("# plain", false).unwrap().body, "# plain");
        assert!(parse("---\nname: x\n", true)
            .unwrap_err()
            .contains("no closing"));
        let bad = parse("---\nname: x\ndescription: [unclosed\n---\n", true).unwrap_err();
        assert!(
            bad.starts_with("its front matter is not valid YAML (line "),
            "{bad}"
        );
        assert!(parse("---\n- a\n- b\n---\n", true)
            .unwrap_err()
            .contains("key: value"));
        let doc = parse("---\nname: {a: 1}\n---\n", true).unwrap();
        assert_eq!(doc.text("name").unwrap_err(), "`name` must be text");
    }
}
