//! What generated `Describe` impls call: a schema for every type and the typed errors of every
//! error type, falling back (autoref specialization, on the concrete types the trait names) to
//! "any value" and "no typed errors" for types that implement neither `JsonSchema` nor
//! `DescribeErrors`, so that turning the feature on never breaks a build.

use std::marker::PhantomData;

use serde_json::Value;

use super::{DescribeErrors, ErrorDoc, SchemaGenerator, Service};

/// Stands for the type `T` in method-resolution tricks.
pub struct Probe<T: ?Sized>(PhantomData<T>);

impl<T: ?Sized> Probe<T> {
    /// The probe of `T`.
    pub const NEW: Self = Probe(PhantomData);
}

/// `T: JsonSchema`: its schema.
pub trait WithSchema {
    /// The schema of the probed type.
    fn schema(&self, generator: &mut SchemaGenerator, service: &mut Service, rust_type: &str) -> Value;
}

impl<T: schemars::JsonSchema + ?Sized> WithSchema for Probe<T> {
    fn schema(&self, generator: &mut SchemaGenerator, _: &mut Service, _: &str) -> Value {
        super::schema_for::<T>(generator)
    }
}

/// Any other type: any value, recorded as untyped.
pub trait WithoutSchema {
    /// "Any value", with a description naming the Rust type.
    fn schema(&self, generator: &mut SchemaGenerator, service: &mut Service, rust_type: &str) -> Value;
}

impl<T: ?Sized> WithoutSchema for &Probe<T> {
    fn schema(&self, _: &mut SchemaGenerator, service: &mut Service, rust_type: &str) -> Value {
        service.untyped(rust_type);
        super::untyped_schema(rust_type)
    }
}

/// `E: DescribeErrors`: its errors.
pub trait WithErrors {
    /// The typed errors of the probed type.
    fn errors(&self, generator: &mut SchemaGenerator) -> Vec<ErrorDoc>;
}

impl<E: DescribeErrors + ?Sized> WithErrors for Probe<E> {
    fn errors(&self, generator: &mut SchemaGenerator) -> Vec<ErrorDoc> {
        E::describe_errors(generator)
    }
}

/// Any other error type: none listed.
pub trait WithoutErrors {
    /// No typed errors.
    fn errors(&self, generator: &mut SchemaGenerator) -> Vec<ErrorDoc>;
}

impl<E: ?Sized> WithoutErrors for &Probe<E> {
    fn errors(&self, _: &mut SchemaGenerator) -> Vec<ErrorDoc> {
        Vec::new()
    }
}
