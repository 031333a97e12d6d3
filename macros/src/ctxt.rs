//! Collects every mistake in a trait so that one build reports them all (serde's `Ctxt`).

use std::fmt::Display;

use quote::ToTokens;

/// The errors found so far, each at its own span.
#[derive(Default)]
pub(crate) struct Errors {
    errors: Vec<syn::Error>,
}

impl Errors {
    /// Record an error spanning `tokens`.
    pub(crate) fn spanned(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.errors.push(syn::Error::new_spanned(tokens, message));
    }

    /// Record an error at one span.
    pub(crate) fn at(&mut self, span: proc_macro2::Span, message: impl Display) {
        self.errors.push(syn::Error::new(span, message));
    }

    /// Record an error that was returned by a parser.
    pub(crate) fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    /// How many errors were recorded so far.
    pub(crate) fn len(&self) -> usize {
        self.errors.len()
    }

    /// `Err` carrying every recorded error (combined), or `Ok` when there were none.
    pub(crate) fn finish(self) -> syn::Result<()> {
        let mut errors = self.errors.into_iter();
        let Some(mut first) = errors.next() else { return Ok(()) };
        for e in errors {
            first.combine(e);
        }
        Err(first)
    }
}
