// Poll a fragment until the server says the work is done (X-Poll-Done: 1), and upload
// files with a progress bar. No framework, no CDN.
(function () {
  "use strict";
  function poll(el) {
    var url = el.getAttribute("data-poll");
    var every = parseInt(el.getAttribute("data-every") || "2000", 10);
    function tick() {
      fetch(url, { credentials: "same-origin" }).then(function (r) {
        return r.text().then(function (html) {
          el.innerHTML = html;
          var done = r.headers.get("X-Poll-Done") === "1";
          // pages that show results once the work is done (charts) reload themselves then
          if (done && el.hasAttribute("data-reload-when-done")) window.location.reload();
          else if (!done) setTimeout(tick, every);
        });
      }).catch(function () { setTimeout(tick, every * 2); });
    }
    setTimeout(tick, every);
  }
  // The form's errors as the page shows them without JavaScript: a list under each field
  // (before its paragraph), whole-form ones at the top. Text only, never markup.
  function errorList(messages, name) {
    var ul = document.createElement("ul");
    ul.className = "errorlist";
    if (name !== "__all__") ul.id = "id_" + name + "_error";
    messages.forEach(function (m) {
      var li = document.createElement("li");
      li.textContent = typeof m === "string" ? m : (m.message || String(m));
      ul.appendChild(li);
    });
    return ul;
  }
  function clearErrors(form) {
    form.querySelectorAll("ul.errorlist").forEach(function (ul) { ul.remove(); });
  }
  function showErrors(form, errors) {
    Object.keys(errors).forEach(function (name) {
      var list = errorList(errors[name], name);
      var input = name === "__all__" ? null : form.querySelector("[name='" + name + "']");
      var anchor = input ? (input.closest("p") || input) : form.firstElementChild;
      if (name === "__all__") list.classList.add("nonfield");
      anchor.parentNode.insertBefore(list, anchor);
    });
  }
  function upload(form) {
    form.addEventListener("submit", function (ev) {
      if (!window.FormData || !window.XMLHttpRequest) return;
      ev.preventDefault();
      var bar = document.getElementById("upload-progress");
      var status = document.getElementById("upload-status");
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.action || window.location.href);
      xhr.setRequestHeader("X-Requested-With", "XMLHttpRequest");
      bar.hidden = false;
      xhr.upload.onprogress = function (e) {
        if (e.lengthComputable) bar.value = Math.round(100 * e.loaded / e.total);
        status.textContent = "uploading… " + bar.value + " %";
      };
      xhr.onload = function () {
        var data = {};
        try { data = JSON.parse(xhr.responseText); } catch (e) { /* not JSON */ }
        if (xhr.status === 202 && data.url) { window.location = data.url; return; }
        bar.hidden = true;
        clearErrors(form);
        if (data.errors) {
          showErrors(form, data.errors);
          status.textContent = "";
        } else {
          status.textContent = data.detail || "upload failed (" + xhr.status + ")";
        }
      };
      xhr.onerror = function () { status.textContent = "network error"; };
      xhr.send(new FormData(form));
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-poll]").forEach(poll);
    document.querySelectorAll("form[data-upload]").forEach(upload);
  });
})();
