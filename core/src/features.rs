//! Where the layers are put together: a connection's builder comes with every feature of the
//! crate plugged in (streams, progress), each through the connection's seam; the connection
//! itself names none of them.

use crate::connection::{Builder, Features};

impl Default for Builder {
    fn default() -> Self {
        Builder::with_features(
            Features::default().with::<crate::stream::StreamsFeature>().with::<crate::progress::ProgressFeature>(),
        )
    }
}
