-- negotiation.decided takes the field names of interop.md's audit event: `peerDigest`
-- becomes `peer`, `version` becomes `negotiated`, and a refusal says `"negotiated": null`.
-- Payloads are stored as compact JSON text (serde_json, no spaces), so a key is always
-- spelled `"name":`; inside a string value a quote is escaped (`\"`), so these patterns
-- can only match keys. Events recorded before keep their unkeyed digest (the identity it
-- was made from is not stored, so it cannot be re-keyed); it is still 64 hex digits and
-- the same for the same peer. A downgrade recorded before stays `accepted`: which version
-- was preferred then is not stored either.
UPDATE host_events
   SET payload = replace(replace(payload, '"peerDigest":', '"peer":'), '"version":', '"negotiated":')
 WHERE type = 'negotiation.decided';
UPDATE host_events
   SET payload = replace(payload, '"outcome":"refused"', '"outcome":"refused","negotiated":null')
 WHERE type = 'negotiation.decided' AND payload NOT LIKE '%"negotiated":%';
UPDATE events
   SET payload = replace(replace(payload, '"peerDigest":', '"peer":'), '"version":', '"negotiated":')
 WHERE type = 'negotiation.decided';
UPDATE events
   SET payload = replace(payload, '"outcome":"refused"', '"outcome":"refused","negotiated":null')
 WHERE type = 'negotiation.decided' AND payload NOT LIKE '%"negotiated":%';
