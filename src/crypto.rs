//! The four primitives signed and sealed checkpoints need: HMAC-SHA256 (sign and constant-time verify) and
//! AES-256-GCM (seal with a fresh random nonce, open). Natively from RustCrypto crates; on wasm32 from the
//! host's Web Crypto (`crypto.subtle`: Workers, browsers, Node ≥ 20), so the .wasm carries no crypto code.
//! All async, because Web Crypto is.

/// Bytes of an AES-GCM nonce, written in front of the ciphertext (crypto.js uses the same).
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
pub(crate) const NONCE_BYTES: usize = 12;

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
    use aes_gcm::{Aes256Gcm, Nonce};
    use hmac::{Hmac, Mac};
    use sha2::Sha256;

    use super::NONCE_BYTES;

    type HmacSha256 = Hmac<Sha256>;

    fn mac(key: &[u8], data: &[u8]) -> Result<HmacSha256, String> {
        // HMAC takes keys of any length; the error cannot happen, but is reported rather than unwrapped.
        let mut m = <HmacSha256 as Mac>::new_from_slice(key).map_err(|e| e.to_string())?;
        m.update(data);
        Ok(m)
    }

    pub(crate) async fn hmac(key: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
        Ok(mac(key, data)?.finalize().into_bytes().to_vec())
    }

    pub(crate) async fn hmac_verify(key: &[u8], data: &[u8], tag: &[u8]) -> Result<bool, String> {
        Ok(mac(key, data)?.verify_slice(tag).is_ok())
    }

    pub(crate) async fn seal(key: &[u8], aad: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, String> {
        let cipher = Aes256Gcm::new_from_slice(key).map_err(|e| e.to_string())?;
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let sealed = cipher
            .encrypt(&nonce, Payload { msg: plaintext, aad })
            .map_err(|e| e.to_string())?;
        let mut out = Vec::with_capacity(NONCE_BYTES + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    pub(crate) async fn open(key: &[u8], aad: &[u8], blob: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let cipher = Aes256Gcm::new_from_slice(key).map_err(|e| e.to_string())?;
        let Some((nonce, sealed)) = blob.split_at_checked(NONCE_BYTES) else {
            return Ok(None);
        };
        Ok(cipher
            .decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad })
            .ok())
    }
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use js_sys::{Promise, Uint8Array};
    use wasm_bindgen::prelude::*;
    use wasm_bindgen_futures::JsFuture;

    #[wasm_bindgen(module = "/src/crypto.js")]
    extern "C" {
        #[wasm_bindgen(js_name = hmacSign)]
        fn hmac_sign(key: &[u8], data: &[u8]) -> Promise;
        #[wasm_bindgen(js_name = hmacVerify)]
        fn hmac_verify_js(key: &[u8], data: &[u8], tag: &[u8]) -> Promise;
        #[wasm_bindgen(js_name = aesSeal)]
        fn aes_seal(key: &[u8], aad: &[u8], plaintext: &[u8]) -> Promise;
        #[wasm_bindgen(js_name = aesOpen)]
        fn aes_open(key: &[u8], aad: &[u8], blob: &[u8]) -> Promise;
    }

    async fn settle(p: Promise) -> Result<JsValue, String> {
        JsFuture::from(p).await.map_err(|e| {
            let message = js_sys::Reflect::get(&e, &"message".into())
                .ok()
                .and_then(|m| m.as_string())
                .unwrap_or_else(|| "Web Crypto failed".to_owned());
            format!("Web Crypto (crypto.subtle): {message}")
        })
    }

    pub(crate) async fn hmac(key: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
        Ok(Uint8Array::new(&settle(hmac_sign(key, data)).await?).to_vec())
    }

    pub(crate) async fn hmac_verify(key: &[u8], data: &[u8], tag: &[u8]) -> Result<bool, String> {
        Ok(settle(hmac_verify_js(key, data, tag)).await?.as_bool() == Some(true))
    }

    pub(crate) async fn seal(key: &[u8], aad: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, String> {
        Ok(Uint8Array::new(&settle(aes_seal(key, aad, plaintext)).await?).to_vec())
    }

    pub(crate) async fn open(key: &[u8], aad: &[u8], blob: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let opened = settle(aes_open(key, aad, blob)).await?;
        Ok((!opened.is_null()).then(|| Uint8Array::new(&opened).to_vec()))
    }
}

pub(crate) use imp::{hmac, hmac_verify, open, seal};

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        let tag = pollster::block_on(hmac(b"Jefe", b"what do ya want for nothing?")).unwrap_or_default();
        let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        assert!(pollster::block_on(hmac_verify(b"Jefe", b"what do ya want for nothing?", &tag)).unwrap_or(false));
        let mut bad = tag.clone();
        bad[31] ^= 1;
        assert!(!pollster::block_on(hmac_verify(b"Jefe", b"what do ya want for nothing?", &bad)).unwrap_or(true));
    }

    #[test]
    fn sealed_bytes_open_only_unchanged_with_the_same_key_and_aad() {
        let key = [7u8; 32];
        let blob = pollster::block_on(seal(&key, b"aad", b"hello")).unwrap_or_default();
        assert_eq!(blob.len(), NONCE_BYTES + 5 + 16);
        assert_eq!(
            pollster::block_on(open(&key, b"aad", &blob)),
            Ok(Some(b"hello".to_vec()))
        );
        assert_eq!(pollster::block_on(open(&key, b"other", &blob)), Ok(None));
        assert_eq!(pollster::block_on(open(&[8u8; 32], b"aad", &blob)), Ok(None));
        let mut flipped = blob.clone();
        flipped[NONCE_BYTES] ^= 1;
        assert_eq!(pollster::block_on(open(&key, b"aad", &flipped)), Ok(None));
        assert_eq!(pollster::block_on(open(&key, b"aad", &blob[..5])), Ok(None));
        let again = pollster::block_on(seal(&key, b"aad", b"hello")).unwrap_or_default();
        assert_ne!(blob, again, "every seal draws a fresh nonce");
    }
}
