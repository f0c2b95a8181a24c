//! Where alerts go: the notice a rule's crossing makes ([`alert`]), the bounded queue each
//! receiver keeps ([`outbox`]), and the receivers — a webhook ([`webhook`]) and Prometheus
//! Alertmanager's v2 API ([`alertmanager`]) — each retrying on its own, never holding the
//! board up.

pub(crate) mod alert;
pub(crate) mod alertmanager;
pub(crate) mod outbox;
pub(crate) mod webhook;
