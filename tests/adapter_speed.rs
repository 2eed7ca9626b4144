#![cfg(target_arch = "wasm32")]
use wasm_bindgen_test::*;
use webgpu_guard::web::init;
use webgpu_guard::web::js::now_ms;
wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn adapter_speed() {
    let gpu = init::navigator_gpu().unwrap();
    for round in 0..4 {
        let t0 = now_ms();
        let adapter = init::request_adapter(&gpu).await.unwrap();
        let t1 = now_ms();
        let device = init::request_device(&adapter, "a").await.unwrap();
        let t2 = now_ms();
        device.destroy();
        let t3 = now_ms();
        let adapter2 = init::request_adapter(&gpu).await.unwrap();
        let t4 = now_ms();
        let device2 = init::request_device(&adapter2, "b").await.unwrap();
        let t5 = now_ms();
        // Without destroying the first.
        let adapter3 = init::request_adapter(&gpu).await.unwrap();
        let t6 = now_ms();
        drop(device2);
        let _ = adapter3;
        web_sys::console::log_1(&format!("round {round}: adapter {:.1} device {:.1} | after destroy: adapter {:.1} device {:.1} | adapter with a live device {:.1}", t1-t0, t2-t1, t4-t3, t5-t4, t6-t5).into());
    }
    panic!("show");
}
